//! Real captured PROFINET frames (hex files, one Ethernet frame each).
//!
//! Two sources: the permissively licensed frames (MIT/Apache/BSD) copied into this repository
//! under `protocol/tests/fixtures/real-frames/` with their provenance, and the full set in the
//! steering repository's `shared/fixtures/real-frames/` (beside the checkout), read when present.

use std::path::{Path, PathBuf};

/// A real frame and the name of the file it came from.
#[derive(Debug, Clone)]
pub struct RealFrame {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The workspace root (two levels above this crate).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root exists")
}

/// The frames kept in this repository.
pub fn local_dir() -> PathBuf {
    workspace_root().join("protocol/tests/fixtures/real-frames")
}

/// `shared/fixtures/real-frames` beside the checkout, when present.
pub fn shared_dir() -> Option<PathBuf> {
    let p = workspace_root().join("../shared/fixtures/real-frames");
    p.is_dir().then_some(p)
}

/// Parse the fixture format: lowercase hex bytes separated by white space.
pub fn parse_hex(text: &str) -> Result<Vec<u8>, String> {
    text.split_whitespace()
        .map(|tok| u8::from_str_radix(tok, 16).map_err(|e| format!("bad hex byte {tok:?}: {e}")))
        .collect()
}

/// Load every `*.hex` file of a directory, sorted by name.
pub fn load_dir(dir: &Path) -> Vec<RealFrame> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "hex"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            RealFrame {
                name: p.file_name().unwrap().to_string_lossy().into_owned(),
                bytes: parse_hex(&text).unwrap_or_else(|e| panic!("{}: {e}", p.display())),
            }
        })
        .collect()
}

/// All frames: the shared set when present (it is a superset), else the local copies.
pub fn all() -> Vec<RealFrame> {
    match shared_dir() {
        Some(d) => load_dir(&d),
        None => load_dir(&local_dir()),
    }
}

/// One frame by file name, from the local copies first, then the shared set.
pub fn by_name(name: &str) -> Option<RealFrame> {
    let local = local_dir().join(name);
    let path = if local.exists() {
        local
    } else {
        shared_dir()?.join(name)
    };
    let text = std::fs::read_to_string(&path).ok()?;
    Some(RealFrame {
        name: name.to_string(),
        bytes: parse_hex(&text).ok()?,
    })
}
