//! Ownership and modes on private scratch files. Another user's file is made with `chown` when
//! the tests run as root; otherwise `/` (root's) stands for one.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::PathBuf;

use super::*;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("occupancy-trust-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

/// Gives `path` (recursively) to uid 12345; `false` when not root (nothing changed).
pub(crate) fn give_to_another_user(path: &Path) -> bool {
    if current_uid() != Some(0) {
        return false;
    }
    let status = std::process::Command::new("chown")
        .args(["-R", "-h", "12345:12345"])
        .arg(path)
        .status()
        .unwrap();
    assert!(status.success(), "chown {}", path.display());
    true
}

#[test]
fn the_current_user_owns_what_this_process_creates() {
    let dir = scratch("uid");
    let file = dir.join("mine");
    std::fs::write(&file, "").unwrap();
    assert_eq!(current_uid(), Some(std::fs::metadata(&file).unwrap().uid()));
    assert_eq!(find_uid(), current_uid());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn only_files_of_ours_that_others_cannot_write_are_trusted() {
    let dir = scratch("modes");
    let file = dir.join("entry");
    std::fs::write(&file, "").unwrap();
    chmod(&file, 0o644);
    assert_eq!(distrust(&std::fs::metadata(&file).unwrap()), None);
    for mode in [0o664, 0o646, 0o777] {
        chmod(&file, mode);
        let reason = distrust(&std::fs::metadata(&file).unwrap()).unwrap();
        assert_eq!(
            reason,
            format!("is writable by group or others (mode {mode:o})")
        );
    }
    make_private(&file).unwrap();
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o755);
    let theirs = if give_to_another_user(&file) {
        std::fs::metadata(&file).unwrap()
    } else {
        std::fs::metadata("/").unwrap()
    };
    let reason = distrust(&theirs).unwrap();
    assert!(
        reason.starts_with(&format!("belongs to uid {}, not to you", theirs.uid())),
        "{reason}"
    );
    let link = dir.join("link");
    std::os::unix::fs::symlink("entry", &link).unwrap();
    assert!(distrust(&std::fs::symlink_metadata(&link).unwrap()).is_some());
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_cache_dir_is_made_private_and_never_loosened_or_borrowed() {
    let dir = scratch("cache-dir");
    let made = dir.join("home/.cache/occupancy");
    check_private_dir(&made).unwrap();
    for created in [&made, &dir.join("home/.cache"), &dir.join("home")] {
        let mode = std::fs::metadata(created).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700, "{}", created.display());
    }
    let shared = dir.join("shared");
    std::fs::create_dir(&shared).unwrap();
    chmod(&shared, 0o1777);
    let error = check_private_dir(&shared).unwrap_err();
    assert!(
        matches!(&error, Error::UntrustedCache { path, reason }
            if *path == shared && reason.contains("mode 1777")),
        "{error:?}"
    );
    let mode = std::fs::metadata(&shared).unwrap().mode() & 0o7777;
    assert_eq!(mode, 0o1777, "an existing directory keeps its mode");
    let theirs = dir.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    chmod(&theirs, 0o700);
    if give_to_another_user(&theirs) {
        let error = check_private_dir(&theirs).unwrap_err().to_string();
        assert!(error.contains("belongs to uid 12345"), "{error}");
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_cache_root_is_private_up_to_the_directory_vouched_for() {
    let dir = scratch("root");
    let out = dir.join("out");
    std::fs::create_dir(&out).unwrap();
    chmod(&out, 0o775);
    let root = out.join("occupancy/cache");
    std::fs::create_dir_all(&root).unwrap();
    chmod(&out.join("occupancy"), 0o777);
    chmod(&root, 0o775);
    open_cache_root(&root, &out).unwrap();
    for (path, mode) in [
        (&root, 0o755),
        (&out.join("occupancy"), 0o755),
        (&out, 0o775),
    ] {
        assert_eq!(
            std::fs::metadata(path).unwrap().mode() & 0o777,
            mode,
            "{}",
            path.display()
        );
    }
    if give_to_another_user(&out.join("occupancy")) {
        let error = open_cache_root(&root, &out).unwrap_err().to_string();
        assert!(
            error.contains("occupancy-build: the compile cache in") && error.contains("uid 12345"),
            "{error}"
        );
        let slot = dir.join("slot");
        std::fs::create_dir(&slot).unwrap();
        give_to_another_user(&slot);
        assert!(open_slot(&slot)
            .unwrap_err()
            .contains("belongs to uid 12345"));
    }
    let mine = dir.join("mine");
    std::fs::create_dir(&mine).unwrap();
    chmod(&mine, 0o777);
    open_slot(&mine).unwrap();
    assert_eq!(std::fs::metadata(&mine).unwrap().mode() & 0o777, 0o755);
    open_slot(&dir.join("not-yet")).unwrap();
    let _ = std::fs::remove_dir_all(dir);
}
