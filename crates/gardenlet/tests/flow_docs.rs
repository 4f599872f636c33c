//! `docs/gardenlet-flows.md` must be what the flows generate.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

#[tokio::test]
async fn flow_docs_are_current() {
    let path = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/gardenlet-flows.md");
    let want = gardenlet::shoot::flows::docs::document().unwrap();
    if std::env::var_os("UPDATE_FLOW_DOCS").is_some() {
        std::fs::write(&path, &want).unwrap();
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        have == want,
        "docs/gardenlet-flows.md is out of date; regenerate with: UPDATE_FLOW_DOCS=1 cargo test -p gardenlet --test flow_docs"
    );
}
