//! Where config values and secrets are kept: one file per partner, `{data}/values/{agent}.json`,
//! outside sled.
//!
//! sled is log-structured: a value it deletes or replaces stays, as bytes, in its segment of the
//! file `db` until sled moves that segment's live pages elsewhere and reuses it, which may be
//! never (see `host/ARCHITECTURE.md`, "Removing a tenant"). A secret kept there would outlive
//! its deletion and its tenant. A file of its own goes when it is deleted: each change writes a
//! new file whole (a temporary file, `fsync`, `rename`, `fsync` of the directory) and removing
//! the partner's tenant unlinks it. Files are readable by the host's user only.
//!
//! Stores written before this kept the values in sled (`values/{agent}` in the tenancy tree):
//! [`ValueFiles::migrate`] moves them out at start-up.

use super::TenancyError;
use crate::runtime::outbound::AgentValues;
use crate::store::Store;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The directory of the values files.
pub(super) struct ValueFiles {
    dir: PathBuf,
}

fn io(what: &str, path: &Path, e: std::io::Error) -> TenancyError {
    TenancyError::Io(format!("cannot {what} {}: {e}", path.display()))
}

impl ValueFiles {
    /// The files under `{data_dir}/values`.
    pub(super) fn new(data_dir: &Path) -> Self {
        ValueFiles {
            dir: data_dir.join("values"),
        }
    }

    fn path(&self, agent: &str) -> PathBuf {
        // Partner ids are checked ids (a-z, 0-9, '-', '_'): a file name, never a path.
        self.dir.join(format!("{agent}.json"))
    }

    /// `agent`'s values; none set: empty.
    pub(super) fn read(&self, agent: &str) -> Result<AgentValues, TenancyError> {
        let path = self.path(agent);
        match std::fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| TenancyError::Io(format!("{} is unreadable: {e}", path.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(AgentValues::default()),
            Err(e) => Err(io("read", &path, e)),
        }
    }

    /// Replace `agent`'s values, durably: the file is whole, old or new, whatever happens.
    pub(super) fn write(&self, agent: &str, values: &AgentValues) -> Result<(), TenancyError> {
        let bytes = serde_json::to_vec(values).map_err(|e| TenancyError::Io(e.to_string()))?;
        create_private_dir(&self.dir).map_err(|e| io("create", &self.dir, e))?;
        let path = self.path(agent);
        let tmp = self.dir.join(format!("{agent}.json.tmp"));
        let written = private_file(&tmp).and_then(|mut file| {
            file.write_all(&bytes)?;
            file.sync_all()
        });
        if let Err(e) = written {
            let _ = std::fs::remove_file(&tmp);
            return Err(io("write", &tmp, e));
        }
        std::fs::rename(&tmp, &path).map_err(|e| io("rename", &tmp, e))?;
        self.sync_dir()
    }

    /// Delete `agent`'s values (and a temporary file a crash left); none: nothing to do.
    pub(super) fn delete(&self, agent: &str) -> Result<(), TenancyError> {
        for path in [self.path(agent), self.dir.join(format!("{agent}.json.tmp"))] {
            match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("delete", &path, e));
                }
                _ => {}
            }
        }
        if self.dir.exists() {
            self.sync_dir()?;
        }
        Ok(())
    }

    /// A rename or an unlink is durable once the directory is synced.
    fn sync_dir(&self) -> Result<(), TenancyError> {
        std::fs::File::open(&self.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| io("sync", &self.dir, e))
    }

    /// Move values a store kept in sled (`values/{agent}`) to their files, then delete them from
    /// sled. A file already there was written after the crash that interrupted an earlier
    /// migration, so it wins. Returns how many partners' values moved.
    pub(super) fn migrate(&self, store: &Store) -> Result<usize, TenancyError> {
        let stored = store.tenancy_scan("values/")?;
        let mut moved = Vec::new();
        for (key, bytes) in stored {
            let agent = key.trim_start_matches("values/");
            if !crate::agent::manifest::is_valid_id(agent) {
                return Err(TenancyError::Io(format!(
                    "a stored {key:?} names no partner"
                )));
            }
            if !self.path(agent).exists() {
                let values: AgentValues = bytes.decode()?;
                self.write(agent, &values)?;
            }
            moved.push(key);
        }
        if !moved.is_empty() {
            store.tenancy_apply(&[], &moved)?;
        }
        Ok(moved.len())
    }
}

fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

fn private_file(path: &Path) -> std::io::Result<std::fs::File> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path)
}
