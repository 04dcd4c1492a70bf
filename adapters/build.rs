use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The generator's small test catalogue is compiled by its own crate (`codegen/tests/output`).
    codegen::build_adapters(&[(Path::new("../spec/catalogue.yaml"), "api")]);
}
