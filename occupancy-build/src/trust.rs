//! Whether a file or directory of the compile cache may be trusted: owned by the user running
//! the build (or `cargo occupancy check`) and writable by nobody else.
//!
//! A cache entry decides whether a kernel passes: one another local user could write (a shared
//! directory under `/tmp`, a group-writable entry) could make a spilling kernel pass. So every
//! directory of the cache is created private (mode 0700), every file it keeps loses the group's
//! and others' write permission, and everything read from it is checked: an entry, its
//! manifest, products and pointer, its slot, and the cache directory up to the directory the
//! caller owns, must belong to the current user and not be writable by group or others.
//! The current user is the owner of `/proc/self`, or of a file this process creates; no
//! `unsafe` call (`geteuid`) is needed. Elsewhere than on Unix, everything is trusted.

use std::path::Path;

use crate::Error;

/// The owner of the files this process creates, if it can be found.
#[cfg(unix)]
pub(crate) fn current_uid() -> Option<u32> {
    static UID: std::sync::OnceLock<Option<u32>> = std::sync::OnceLock::new();
    *UID.get_or_init(find_uid)
}

#[cfg(unix)]
fn find_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    if let Ok(metadata) = std::fs::metadata("/proc/self") {
        return Some(metadata.uid());
    }
    // No /proc (macOS, BSD): a file of our own says who we are.
    let probe = std::env::temp_dir().join(format!(
        ".occupancy-uid-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos())
    ));
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .ok()?;
    let uid = file.metadata().ok().map(|metadata| metadata.uid());
    let _ = std::fs::remove_file(&probe);
    uid
}

/// Why a file or directory with this metadata is not to be trusted; `None` when it is ours and
/// writable by us alone.
#[cfg(unix)]
pub(crate) fn distrust(metadata: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let Some(uid) = current_uid() else {
        return Some("cannot be checked: who this process runs as is unknown".into());
    };
    if metadata.uid() != uid {
        return Some(format!(
            "belongs to uid {}, not to you (uid {uid})",
            metadata.uid()
        ));
    }
    if metadata.file_type().is_symlink() {
        return Some("is a symbolic link".into());
    }
    let mode = metadata.mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Some(format!("is writable by group or others (mode {mode:o})"));
    }
    None
}

#[cfg(not(unix))]
pub(crate) fn distrust(_metadata: &std::fs::Metadata) -> Option<String> {
    None
}

/// Creates `dir` and its missing parents, each private (0700).
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Takes the group's and others' write permission from a file of ours (what the umask left).
pub(crate) fn make_private(path: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let metadata = std::fs::symlink_metadata(path)?;
        let mode = metadata.permissions().mode();
        if mode & 0o022 != 0 {
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & !0o022))?;
        }
    }
    #[cfg(not(unix))]
    let _ = path;
    Ok(())
}

/// Makes sure `dir` exists (created private when missing) and may hold a cache: it is the
/// current user's and writable by nobody else. Followed if a link (`~/.cache` may be one).
/// Never changes an existing directory's permissions.
pub fn check_private_dir(dir: &Path) -> Result<(), Error> {
    create_private_dir(dir).map_err(|error| Error::Io {
        path: dir.to_path_buf(),
        error,
    })?;
    let metadata = std::fs::metadata(dir).map_err(|error| Error::Io {
        path: dir.to_path_buf(),
        error,
    })?;
    match distrust(&metadata) {
        None => Ok(()),
        Some(reason) => Err(Error::UntrustedCache {
            path: dir.to_path_buf(),
            reason,
        }),
    }
}

/// The cache's own directories, from `root` up to (not including) `owned`, the directory the
/// caller vouches for (`OUT_DIR`, which is cargo's; the CLI's cache directory, which it checked
/// with [`check_private_dir`]), created private when missing. One of ours that others may write is made private (an older
/// version created them with the umask's mode; whatever others put in it is checked entry by
/// entry); one that is another user's is an error.
pub(crate) fn open_cache_root(root: &Path, owned: &Path) -> Result<(), Error> {
    create_private_dir(root).map_err(|error| Error::Io {
        path: root.to_path_buf(),
        error,
    })?;
    for dir in root.ancestors() {
        if dir == owned || !dir.starts_with(owned) {
            break;
        }
        let metadata = std::fs::metadata(dir).map_err(|error| Error::Io {
            path: dir.to_path_buf(),
            error,
        })?;
        if distrust(&metadata).is_some() && owned_by_us(&metadata) {
            make_private(dir).map_err(|error| Error::Io {
                path: dir.to_path_buf(),
                error,
            })?;
            continue;
        }
        if let Some(reason) = distrust(&metadata) {
            return Err(Error::UntrustedCache {
                path: dir.to_path_buf(),
                reason,
            });
        }
    }
    Ok(())
}

/// Whether the current user owns the file (and so may change its permissions).
fn owned_by_us(metadata: &std::fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        current_uid() == Some(metadata.uid())
    }
    #[cfg(not(unix))]
    {
        let _ = metadata;
        true
    }
}

/// Makes a slot directory of ours private when the umask left it writable by others; `Err`
/// with the reason when it is not ours (or cannot be read): nothing in it is used.
pub(crate) fn open_slot(dir: &Path) -> Result<(), String> {
    let metadata = match std::fs::symlink_metadata(dir) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(format!("cannot be read ({error})")),
    };
    match distrust(&metadata) {
        None => Ok(()),
        Some(_) if owned_by_us(&metadata) && metadata.is_dir() => {
            make_private(dir).map_err(|error| format!("cannot be made private ({error})"))
        }
        Some(reason) => Err(reason),
    }
}

#[cfg(all(test, unix))]
pub(crate) mod tests;
