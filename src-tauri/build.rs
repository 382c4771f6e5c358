//! Build script of the desktop app: checks that the web UI is built, then runs `tauri-build`,
//! which reads `tauri.conf.json` beside the root `Cargo.toml`.

use std::path::Path;

fn main() {
    // `generate_context!` embeds every file of ui/dist: rebuild when the UI is rebuilt.
    println!("cargo:rerun-if-changed=ui/dist");
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    if !Path::new(&manifest_dir).join("ui/dist/index.html").is_file() {
        eprintln!("error: the web UI is not built: ui/dist/index.html is missing.");
        eprintln!("       run: cd ui && npm ci && npm run build");
        std::process::exit(1);
    }
    tauri_build::build();
}
