//! The one item shape of every platform (spec section 2.2) and a page of them.

use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

/// One result. Every key is always present; what a source cannot fill is `None` (JSON `null`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Item {
    pub id: String,
    pub platform: &'static str,
    #[serde(rename = "type")]
    pub kind: String,
    pub title: Option<String>,
    pub text: Option<String>,
    pub url: Option<String>,
    pub author: Option<String>,
    pub author_name: Option<String>,
    /// `YYYY-MM-DDTHH:MM:SSZ` (see `upstream::dates`).
    pub created_at: Option<String>,
    pub metrics: Metrics,
    pub extra: Map<String, Value>,
}

impl Item {
    /// An item with only its identity set; adapters fill in the rest.
    pub fn new(platform: &'static str, kind: &str, id: impl Into<String>) -> Self {
        Item {
            id: id.into(),
            platform,
            kind: kind.to_string(),
            title: None,
            text: None,
            url: None,
            author: None,
            author_name: None,
            created_at: None,
            metrics: Metrics::default(),
            extra: Map::new(),
        }
    }

    /// Sets an `extra` key when the value is present.
    pub fn extra(&mut self, key: &str, value: impl Into<Value>) {
        let value = value.into();
        if !value.is_null() {
            self.extra.insert(key.to_string(), value);
        }
    }
}

/// Only the metrics a platform reports; an absent count is left out, never written as 0.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Metrics {
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub score: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub comments: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub likes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub views: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub shares: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub reposts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub quotes: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub rating: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "number")]
    pub rating_count: Option<f64>,
}

/// Whole numbers serialise without a fraction (`12`, not `12.0`).
fn number<S: Serializer>(v: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(n) if n.fract() == 0.0 && n.abs() < 9.0e15 => s.serialize_i64(*n as i64),
        Some(n) => s.serialize_f64(*n),
        None => s.serialize_none(),
    }
}

/// What one call returns: items, the total the source reported, and the next cursor.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub items: Vec<Item>,
    /// The total reported by the source; the item count when it reports none.
    pub total: Option<u64>,
    /// Opaque to clients; `None` on the last page.
    pub next_cursor: Option<String>,
}

impl Page {
    /// The answer to a lookup: exactly one item, no next page.
    pub fn single(item: Item) -> Page {
        Page {
            items: vec![item],
            total: Some(1),
            next_cursor: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_is_present_and_metrics_are_numbers() {
        let mut item = Item::new("techforum", "post", "1");
        item.metrics.score = Some(12.0);
        item.metrics.rating = Some(4.5);
        let v = serde_json::to_value(&item).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "id",
                "platform",
                "type",
                "title",
                "text",
                "url",
                "author",
                "author_name",
                "created_at",
                "metrics",
                "extra"
            ]
        );
        assert_eq!(v["title"], Value::Null);
        assert_eq!(v["metrics"].to_string(), r#"{"score":12,"rating":4.5}"#);
    }
}
