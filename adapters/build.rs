use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    codegen::build_adapters(&[
        (Path::new("../spec/catalogue.yaml"), "api"),
        // A small catalogue whose generated code is compiled and tested here too (codegen/tests/fixtures).
        (Path::new("../codegen/tests/fixtures/mini.yaml"), "mini_api"),
    ]);
}
