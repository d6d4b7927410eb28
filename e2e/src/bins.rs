//! Finding (and building) the workspace's binaries. A test binary lives in `<target>/<profile>/deps/`, so
//! the daemons are in `<target>/<profile>/`; one `cargo build` per process makes sure they are there and
//! current (a no-op under `cargo test --workspace`, which already built them). `DTA_BIN_DIR` overrides.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};

/// The packages whose binaries the harness runs.
const PACKAGES: [&str; 4] = [
    "dta-translator-daemon",
    "dta-collector",
    "dta-reporter",
    "dta-pktgen",
];

fn profile_dir() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("locating the running executable")?;
    let mut dir = exe.parent().context("executable without a directory")?;
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir = dir.parent().context("deps without a parent")?;
    }
    Ok(dir.to_path_buf())
}

fn build(dir: &Path) -> Result<()> {
    let target = dir
        .parent()
        .context("profile directory without a target directory")?;
    let profile = dir
        .file_name()
        .and_then(|n| n.to_str())
        .context("profile directory name")?;
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../Cargo.toml");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--quiet", "--bins", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target);
    match profile {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    for p in PACKAGES {
        cmd.args(["-p", p]);
    }
    let status = cmd
        .status()
        .context("running cargo build for the daemons")?;
    if !status.success() {
        bail!("cargo build of {PACKAGES:?} failed ({status})");
    }
    Ok(())
}

/// The path of workspace binary `name`, built if needed.
pub fn bin(name: &str) -> Result<PathBuf> {
    if let Ok(dir) = std::env::var("DTA_BIN_DIR") {
        return Ok(PathBuf::from(dir).join(name));
    }
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let dir = BUILT
        .get_or_init(|| {
            let dir = profile_dir().map_err(|e| format!("{e:#}"))?;
            build(&dir).map_err(|e| format!("{e:#}"))?;
            Ok(dir)
        })
        .clone()
        .map_err(anyhow::Error::msg)?;
    let path = dir.join(name);
    if !path.exists() {
        bail!("{} does not exist after building", path.display());
    }
    Ok(path)
}
