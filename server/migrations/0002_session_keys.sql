-- A dashboard session opened by browser-link belongs to the key that asked for the link: it ends when
-- that key is revoked or rotated away. NULL for sessions signed in with an e-mailed code.
ALTER TABLE login_links ADD COLUMN key_id TEXT;
ALTER TABLE sessions ADD COLUMN key_id TEXT;
