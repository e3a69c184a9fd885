//! The committed bindings (`src/bindings.rs`) are exactly what wit-bindgen generates from the
//! crate's WIT (`wit/partner.wit`).
//!
//! The SDK used to call `wit_bindgen::generate!`; that proc macro brings a WIT parser and a
//! component encoder (wit-parser, wit-component, wasm-encoder, wasm-metadata, ...) into every
//! partner's first build. The bindings are generated here instead, by the same generator
//! (wit-bindgen-rust, the version of the `wit-bindgen` runtime) with the options the macro call
//! had, and committed. After changing the WIT, regenerate them with
//!
//! ```sh
//! AIPHOST_BLESS_BINDINGS=1 cargo test -p aiphost-sdk --test bindings
//! ```

use std::path::Path;

use wit_bindgen_core::Files;
use wit_bindgen_core::wit_parser::Resolve;
use wit_bindgen_rust::Opts;

/// What the committed file starts with, before the generator's own output.
const HEADER: &str = "\
// The aiphost:partner bindings, generated from wit/partner.wit by tests/bindings.rs; do not edit.
// Regenerate: AIPHOST_BLESS_BINDINGS=1 cargo test -p aiphost-sdk --test bindings
";

/// The bindings as wit-bindgen generates them now.
fn generate() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut resolve = Resolve::default();
    let (package, _) = resolve.push_path(root.join("wit")).expect("wit/ parses");
    let world = resolve
        .select_world(&[package], Some("partner"))
        .expect("wit/ has the partner world");
    // The options of the `generate!` call these bindings replace:
    //   path: "../../wit", world: "partner", pub_export_macro: true,
    //   export_macro_name: "__export_partner", default_bindings_module: "aiphost_sdk::bindings"
    // plus `format` (prettyplease), which only changes whitespace.
    let opts = Opts {
        pub_export_macro: true,
        export_macro_name: Some("__export_partner".into()),
        default_bindings_module: Some("aiphost_sdk::bindings".into()),
        format: true,
        ..Opts::default()
    };
    let mut files = Files::default();
    opts.build()
        .generate(&resolve, world, &mut files)
        .expect("wit-bindgen generates the bindings");
    let (_, src) = files.iter().next().expect("one generated file");
    format!(
        "{HEADER}{}",
        std::str::from_utf8(src).expect("generated Rust is UTF-8")
    )
}

#[test]
fn committed_bindings_are_what_wit_bindgen_generates() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/bindings.rs");
    let generated = generate();
    if std::env::var_os("AIPHOST_BLESS_BINDINGS").is_some() {
        std::fs::write(&path, &generated).expect("writing src/bindings.rs");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "src/bindings.rs is not what wit-bindgen generates from wit/partner.wit (first difference \
         at line {}); regenerate it: AIPHOST_BLESS_BINDINGS=1 cargo test -p aiphost-sdk --test bindings",
        committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| committed.lines().count().min(generated.lines().count()))
            + 1
    );
}
