//! `hack/check-image-libs.sh`, the check `hack/images.sh` runs on every image before it builds
//! it: a file in the image that loads a shared library the image lacks fails the build. The
//! case it was written for: iptables' `libxt_statistic.so` (loaded at run time by
//! `iptables-restore`, so `ldd` of the binary never showed it) needs `libm.so.6`, which the
//! kube-proxy image lacked; every sync of a Service with two or more endpoints failed in shoots.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use std::path::{Path, PathBuf};
use std::process::Command;

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../hack/check-image-libs.sh")
}

/// Runs the check on `root`: success, and what it printed.
fn check(root: &Path) -> (bool, String) {
    let out = Command::new("bash").arg(script()).arg(root).arg("test-image").output().unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Copies a host file to the same path inside `root`, following links.
fn copy_in(root: &Path, host: &str) {
    let dest = root.join(host.trim_start_matches('/'));
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::copy(std::fs::canonicalize(host).unwrap(), dest).unwrap();
}

/// The path of a library of the host, as the host's dynamic linker resolves it for `/bin/sh`'s
/// neighbours: the first of the default Debian directories that has it.
fn host_lib(name: &str) -> String {
    ["/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64"]
        .iter()
        .map(|d| format!("{d}/{name}"))
        .find(|p| Path::new(p).exists())
        .unwrap_or_else(|| panic!("{name} on this host"))
}

/// A module like `libxt_statistic.so`: a shared library that needs libm, built with the host's C
/// compiler (gcc is part of the toolchain every test machine has; `hack/setup-local.sh` installs it).
fn build_module(dir: &Path) -> PathBuf {
    let source = dir.join("module.c");
    std::fs::write(&source, "#include <math.h>\ndouble spread(double x) { return sqrt(x); }\n").unwrap();
    let module = dir.join("libxt_example.so");
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-Wl,--no-as-needed", "-o"])
        .arg(&module)
        .arg(&source)
        .arg("-lm")
        .output()
        .expect("cc (gcc), to build a test module; run hack/setup-local.sh");
    assert!(out.status.success(), "cc: {}", String::from_utf8_lossy(&out.stderr));
    module
}

#[test]
fn a_module_loaded_at_run_time_that_needs_a_library_the_image_lacks_fails_the_check() {
    let work = tempfile::tempdir().unwrap();
    let module = build_module(work.path());
    let root = work.path().join("rootfs");
    let xtables = root.join("usr/lib/x86_64-linux-gnu/xtables");
    std::fs::create_dir_all(&xtables).unwrap();
    std::fs::copy(&module, xtables.join("libxt_example.so")).unwrap();
    copy_in(&root, &host_lib("libc.so.6"));
    copy_in(&root, "/lib64/ld-linux-x86-64.so.2");

    let (ok, report) = check(&root);
    assert!(!ok, "the module needs libm.so.6, which the root lacks; the check said: {report}");
    assert!(
        report.contains("/usr/lib/x86_64-linux-gnu/xtables/libxt_example.so needs libm.so.6"),
        "the report names the file and the library: {report}"
    );
    assert!(report.contains("test-image"), "the report names the image: {report}");

    copy_in(&root, &host_lib("libm.so.6"));
    let (ok, report) = check(&root);
    assert!(ok, "with libm.so.6 in the root, everything resolves: {report}");
}

#[test]
fn a_binary_without_its_interpreter_and_libraries_fails_and_a_link_inside_the_root_counts() {
    let work = tempfile::tempdir().unwrap();
    let root = work.path();
    copy_in(root, "/bin/sh"); // dash: libc and the dynamic linker
    let (ok, report) = check(root);
    assert!(!ok, "nothing but the binary: {report}");
    assert!(report.contains("program interpreter /lib64/ld-linux-x86-64.so.2"), "{report}");
    assert!(report.contains("/bin/sh needs libc.so.6"), "{report}");

    // libc in another directory, reached through an absolute link that only resolves inside the
    // root (as the container sees it), and the interpreter.
    let libc = host_lib("libc.so.6");
    std::fs::create_dir_all(root.join("opt/libs")).unwrap();
    std::fs::copy(&libc, root.join("opt/libs/libc.so.6")).unwrap();
    std::fs::create_dir_all(root.join("lib/x86_64-linux-gnu")).unwrap();
    std::os::unix::fs::symlink("/opt/libs/libc.so.6", root.join("lib/x86_64-linux-gnu/libc.so.6")).unwrap();
    copy_in(root, "/lib64/ld-linux-x86-64.so.2");
    let (ok, report) = check(root);
    assert!(ok, "libc through a link inside the root: {report}");
}
