//! fediverse: a federated microblogging network with many instances, read through the REST API
//! of the instance the client names (`instance`, default: the host of the source's base URL).
//!
//! Item ids are `{instance}:{local id}` (local ids mean something only on the instance asked);
//! authors are `user@domain` (local accounts get the instance host appended).
//!
//! `extra` keys: `uri` (the post's global ActivityPub id, for de-duplication across instances),
//! `language`, `sensitive`, `spoiler_text` (the content warning), `in_reply_to_id`, `edited_at`,
//! `reblogged_by` (when the timeline entry was a boost: the booster; the item is the original).

pub mod mastodon;

pub const PLATFORM: &str = "fediverse";
