-- Accounts, keys, sign-in, sessions, the credit ledger and the call log.
-- Portable SQL: runs unchanged on SQLite and PostgreSQL. Times are BIGINT unix seconds, flags INTEGER 0/1,
-- ids TEXT made by the service.

CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    email TEXT NOT NULL UNIQUE,
    balance BIGINT NOT NULL CHECK (balance >= 0),
    created_at BIGINT NOT NULL
);

-- The ledger: the balance of an account always equals the sum of its entries' amounts.
-- kind: grant | purchase | charge | refund. A charge row is written when a call reserves its price
-- (state held, amount = -price); it becomes settled on success, or released on failure, and a release
-- also writes a refund row (+price) with the same ref.
CREATE TABLE credit_entries (
    kind TEXT NOT NULL,
    ref TEXT NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    amount BIGINT NOT NULL,
    state TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (kind, ref)
);
CREATE INDEX credit_entries_account ON credit_entries (account_id);
-- Only held charges are looked up by state (the janitor); a partial index stays small.
CREATE INDEX credit_entries_held ON credit_entries (created_at) WHERE state = 'held';

CREATE TABLE api_keys (
    id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    key_hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    name TEXT,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX api_keys_account ON api_keys (account_id);

CREATE TABLE signin_codes (
    email TEXT PRIMARY KEY,
    code_hash TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    wrong_guesses BIGINT NOT NULL,
    state TEXT NOT NULL
);

-- One-time dashboard links, exchanged for a session by POST /v1/auth/session.
CREATE TABLE login_links (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    kind TEXT NOT NULL,
    expires_at BIGINT NOT NULL,
    used INTEGER NOT NULL
);

CREATE TABLE sessions (
    token_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    kind TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked INTEGER NOT NULL
);

-- Daily caps: one counter per (what, subject, UTC day).
CREATE TABLE daily_counters (
    what TEXT NOT NULL,
    subject TEXT NOT NULL,
    day BIGINT NOT NULL,
    n BIGINT NOT NULL,
    PRIMARY KEY (what, subject, day)
);

CREATE TABLE calls (
    request_id TEXT PRIMARY KEY,
    account_id TEXT NOT NULL,
    key_id TEXT NOT NULL,
    key_prefix TEXT NOT NULL,
    endpoint TEXT NOT NULL,
    status BIGINT NOT NULL,
    credits BIGINT NOT NULL,
    created_at BIGINT NOT NULL
);
CREATE INDEX calls_account_time ON calls (account_id, created_at);

CREATE TABLE settings (
    name TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
