//! Validates items against `schemas.Item` of `spec/catalogue.yaml` (the contract every source keeps).
//! Included with `#[path]` by the adapters tests.

#![allow(dead_code)]

use std::sync::OnceLock;

use serde_json::Value;

fn validator() -> &'static jsonschema::Validator {
    static VALIDATOR: OnceLock<jsonschema::Validator> = OnceLock::new();
    VALIDATOR.get_or_init(|| {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../spec/catalogue.yaml");
        let text = std::fs::read_to_string(path).expect("read spec/catalogue.yaml");
        let catalogue: Value = yaml_serde::from_str(&text).expect("catalogue is YAML");
        let schema = catalogue
            .get("schemas")
            .and_then(|s| s.get("Item"))
            .expect("schemas.Item in the catalogue");
        jsonschema::validator_for(schema).expect("schemas.Item compiles")
    })
}

/// Panics naming the item and every violation when an item breaks the schema.
pub fn assert_items_valid(items: &[adapters::item::Item]) {
    for item in items {
        let value = serde_json::to_value(item).expect("item serialises");
        let errors: Vec<String> = validator()
            .iter_errors(&value)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "item {} breaks schemas.Item: {errors:?}\n{value:#}",
            item.id
        );
    }
}
