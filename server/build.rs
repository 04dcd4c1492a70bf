fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    codegen::build_server(std::path::Path::new("../spec/catalogue.yaml"));
}
