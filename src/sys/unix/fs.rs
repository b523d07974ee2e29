//! Owner-only files on POSIX: mode 0600 at creation.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub fn owner_only(options: &mut OpenOptions) -> &mut OpenOptions {
    options.mode(0o600)
}

pub fn open_owner_only(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    owner_only(options).open(path)
}

#[cfg(test)]
pub fn is_owner_only(path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    Ok(std::fs::metadata(path)?.permissions().mode() & 0o777 == 0o600)
}
