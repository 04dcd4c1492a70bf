//! Checks items against `schemas.Item` of `spec/catalogue.yaml` (the contract's item shape): all
//! eleven keys present, null never missing, metrics only from the listed names and numbers,
//! `created_at` as `YYYY-MM-DDTHH:MM:SSZ` or null. Shared by every platform's tests through
//! `support` (`support::assert_items_valid(&page.items)`).

#![allow(dead_code)]

use std::sync::OnceLock;

use serde_json::Value;

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/catalogue.yaml");
        let text = std::fs::read_to_string(path).expect("read spec/catalogue.yaml");
        let catalogue: Value = yaml_serde::from_str(&text).expect("parse spec/catalogue.yaml");
        let schema = catalogue["schemas"]["Item"].clone();
        assert!(
            schema.is_object(),
            "spec/catalogue.yaml has no schemas.Item"
        );
        jsonschema::validator_for(&schema).expect("schemas.Item is a valid JSON Schema")
    })
}

/// Panics naming the item and every violation when an item does not match `schemas.Item`.
pub fn assert_items_valid(items: &[adapters::item::Item]) {
    let validator = validator();
    for item in items {
        let value = serde_json::to_value(item).expect("an item serialises");
        let errors: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "item {} does not match schemas.Item: {}\n{value:#}",
            item.id,
            errors.join("; ")
        );
    }
}
