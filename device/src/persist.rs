//! Remanent data (station name and IP set permanently over DCP, I&M1-4, written records).
//!
//! One JSON file `<Paths:PersistenceDir>/remanent.json`, written atomically: temp file in the
//! same directory, `fsync`, `rename` over the old file, `fsync` of the directory. A reader
//! therefore sees either the old or the new content, also after `kill -9` or power loss.
//! A file that cannot be parsed is renamed to `remanent.json.corrupt` (kept for inspection),
//! reported (log + alarm) and factory values are used; the daemon never stops because of it.
//!
//! What the data is and how a change changes it (permanent vs temporary DCP Sets, records,
//! resets, the configuration's name) is the protocol crate's [`pn_protocol::machine::remanent`],
//! the rule the simulator runs too; this file stores it.
//!
//! Every change goes through [`Store::commit`]: the new value is computed from the current
//! one, written durably, and only then handed back to become the in-memory value. The stack
//! answers a record write or DCP Set only after that returned (docs/decisions.md, "Remanent
//! data is acknowledged after it is durable"), so the file is never older than what a
//! controller was told, and a failed write changes nothing.

use std::io::Write;
use std::path::{Path, PathBuf};

pub use pn_protocol::machine::remanent::{apply_record, Change, Remanent, StoredIp};

use crate::dataplane::StackEvent;

/// File name inside the persistence directory.
pub const FILE_NAME: &str = "remanent.json";

/// Outcome of [`Store::load`].
#[derive(Debug)]
pub enum LoadOutcome {
    /// No file yet (factory state).
    Missing,
    Loaded(Remanent),
    /// The file was corrupt: factory values are used; the text says why.
    Corrupt(String),
}

/// The persistence store.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
    /// The file's name in `dir` ([`FILE_NAME`] for the daemon).
    file: String,
    /// The file may differ from what the caller holds in memory: a failed write whose
    /// rollback failed too. The next commit then writes even an unchanged value.
    dirty: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Store {
    pub fn new(dir: impl Into<PathBuf>) -> Store {
        Store::named(dir, FILE_NAME)
    }

    /// A store in the file `file` of `dir` (pn-farm keeps one file per device in one
    /// directory); same format and the same atomic write as [`Store::new`]. Temporary and
    /// quarantined files are named after `file`, so stores of one directory never touch each
    /// other's files.
    pub fn named(dir: impl Into<PathBuf>, file: &str) -> Store {
        Store {
            dir: dir.into(),
            file: file.to_string(),
            dirty: Default::default(),
        }
    }

    pub fn path(&self) -> PathBuf {
        self.dir.join(&self.file)
    }

    /// Read the remanent data. Temporary files of writes that were interrupted (the process
    /// was killed between creating the temporary file and the rename) are removed first: the
    /// store is read once at start-up, before this process writes anything.
    pub fn load(&self) -> LoadOutcome {
        self.remove_stale_temp_files();
        let path = self.path();
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return LoadOutcome::Missing,
            Err(e) => return LoadOutcome::Corrupt(format!("cannot read {}: {e}", path.display())),
        };
        match serde_json::from_slice::<Remanent>(&text) {
            Ok(r) if r.version == 1 => LoadOutcome::Loaded(r),
            Ok(r) => {
                self.quarantine();
                LoadOutcome::Corrupt(format!(
                    "{}: unsupported version {}; factory values used",
                    path.display(),
                    r.version
                ))
            }
            Err(e) => {
                self.quarantine();
                LoadOutcome::Corrupt(format!(
                    "{} is corrupt ({e}); moved to {}.corrupt, factory values used",
                    path.display(),
                    self.file
                ))
            }
        }
    }

    fn remove_stale_temp_files(&self) {
        let prefix = format!(".{}.tmp.", self.file);
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in dir.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }

    fn quarantine(&self) {
        let _ = std::fs::rename(self.path(), self.dir.join(format!("{}.corrupt", self.file)));
    }

    /// Write atomically (temp, fsync, rename, fsync dir).
    pub fn save(&self, r: &Remanent) -> std::io::Result<()> {
        self.write(r).map_err(|f| f.error)
    }

    fn write(&self, r: &Remanent) -> Result<(), Failed> {
        let before = |error| Failed {
            error,
            file_changed: false,
        };
        std::fs::create_dir_all(&self.dir).map_err(before)?;
        let mut r = r.clone();
        r.version = 1;
        let bytes = serde_json::to_vec_pretty(&r)
            .map_err(std::io::Error::other)
            .map_err(before)?;
        let tmp = self
            .dir
            .join(format!(".{}.tmp.{}", self.file, std::process::id()));
        let written = (|| {
            let mut f = std::fs::File::create(&tmp)?;
            f.write_all(&bytes)?;
            f.sync_all()?;
            std::fs::rename(&tmp, self.path())
        })();
        if let Err(e) = written {
            // No half-written temp file left behind (disk full, read-only).
            let _ = std::fs::remove_file(&tmp);
            return Err(before(e));
        }
        sync_dir(&self.dir).map_err(|error| Failed {
            error,
            file_changed: true,
        })
    }

    /// Remove the remanent file (factory reset).
    pub fn clear(&self) -> std::io::Result<()> {
        self.remove().map_err(|f| f.error)
    }

    fn remove(&self) -> Result<(), Failed> {
        match std::fs::remove_file(self.path()) {
            Ok(()) => sync_dir(&self.dir).map_err(|error| Failed {
                error,
                file_changed: true,
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(error) => Err(Failed {
                error,
                file_changed: false,
            }),
        }
    }
}

/// A failed write or removal, and whether the file already had its new state (the rename or
/// the unlink was done; only the directory `fsync` failed).
struct Failed {
    error: std::io::Error,
    file_changed: bool,
}

fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// The remanent change an event of the stack carries, if any (the DCP Sets by the protocol
/// crate's rule of which are kept).
pub fn change_of_event(ev: &StackEvent) -> Option<Change> {
    Some(match ev {
        StackEvent::DcpNameAssigned { name, permanent } => {
            Change::station_name_set(name, *permanent)
        }
        StackEvent::DcpIpAssigned {
            ip,
            mask,
            gateway,
            permanent,
            ..
        } => Change::ip_set(*ip, *mask, *gateway, *permanent),
        StackEvent::DcpResetToFactory { mode, .. } => Change::Reset(*mode),
        StackEvent::RecordWritten {
            slot,
            subslot,
            index,
            data,
        } => Change::Record(pn_protocol::machine::remanent::StoredRecord {
            slot: *slot,
            subslot: *subslot,
            index: *index,
            data: data.clone(),
        }),
        _ => return None,
    })
}

impl Store {
    /// Make `change` durable and return the new remanent data, which the caller then takes as
    /// its in-memory value. `current` must be what is stored (the caller serialises commits
    /// and keeps memory equal to the file). When the change leaves the data as it is, nothing
    /// is written. A factory reset deletes the file. On `Err` nothing was changed on disk
    /// (an interrupted rename leaves the old file) and the caller keeps `current`.
    pub fn commit(&self, current: &Remanent, change: &Change) -> std::io::Result<Remanent> {
        use std::sync::atomic::Ordering;
        let next = change.applied_to(current);
        let dirty = self.dirty.load(Ordering::Acquire);
        let res = match change {
            _ if next == *current && !dirty => Ok(()),
            _ => self.write(&next),
        };
        if let Err(f) = res {
            // When only the directory fsync failed, the file already holds the refused
            // value: put the old content back. If that fails too, the next commit writes
            // whatever it has (even an unchanged value) instead of assuming the file equals
            // memory.
            if f.file_changed && self.save(current).is_err() {
                self.dirty.store(true, Ordering::Release);
            }
            return Err(f.error);
        }
        self.dirty.store(false, Ordering::Release);
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataplane::{ResetMode, StoredRecord};

    #[test]
    fn named_stores_of_one_directory_keep_to_their_own_files() {
        let d = tempfile::tempdir().unwrap();
        let a = Store::named(d.path(), "a.json");
        let b = Store::named(d.path(), "b.json");
        let ra = Remanent {
            station_name: Some("dev-a".into()),
            ..Default::default()
        };
        a.save(&ra).unwrap();
        std::fs::write(b.path(), b"{ not json").unwrap();
        // b's corrupt file is quarantined under b's name; a's stays.
        assert!(matches!(b.load(), LoadOutcome::Corrupt(_)));
        assert!(d.path().join("b.json.corrupt").exists());
        match a.load() {
            LoadOutcome::Loaded(r) => assert_eq!(r.station_name.as_deref(), Some("dev-a")),
            o => panic!("{o:?}"),
        }
        // a's stale temporary file is removed by a's load only.
        let stale_b = d.path().join(".b.json.tmp.4242");
        std::fs::write(&stale_b, b"x").unwrap();
        let _ = a.load();
        assert!(stale_b.exists());
        let _ = b.load();
        assert!(!stale_b.exists());
    }

    #[test]
    fn roundtrip_and_corrupt() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        assert!(matches!(s.load(), LoadOutcome::Missing));
        let mut r = Remanent {
            station_name: Some("x".into()),
            ..Default::default()
        };
        apply_record(
            &mut r,
            StoredRecord {
                slot: 1,
                subslot: 1,
                index: 0xAFF1,
                data: [&[0u8; 6][..], b"fn"].concat(),
            },
        );
        assert_eq!(r.im.tag_function, "fn");
        s.save(&r).unwrap();
        match s.load() {
            LoadOutcome::Loaded(l) => assert_eq!(l.station_name.as_deref(), Some("x")),
            o => panic!("{o:?}"),
        }
        std::fs::write(s.path(), b"{not json").unwrap();
        assert!(matches!(s.load(), LoadOutcome::Corrupt(_)));
        assert!(d.path().join("remanent.json.corrupt").exists());
        assert!(matches!(s.load(), LoadOutcome::Missing));
        s.clear().unwrap();
    }

    /// `commit` writes before it returns the new value, skips writes that change nothing,
    /// and on an error leaves the file as it was.
    fn loaded(s: &Store) -> Remanent {
        match s.load() {
            LoadOutcome::Loaded(r) => r,
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn commit_is_durable_before_it_returns() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path().join("p"));
        let r = s
            .commit(&Remanent::default(), &Change::StationName(Some("a".into())))
            .unwrap();
        assert_eq!(r.station_name.as_deref(), Some("a"));
        assert_eq!(loaded(&s).station_name.as_deref(), Some("a"));
        // No change: no write (a removed file is not written again).
        std::fs::remove_file(s.path()).unwrap();
        let same = s
            .commit(&r, &Change::StationName(Some("a".into())))
            .unwrap();
        assert_eq!(same, r);
        assert!(!s.path().exists());
        s.save(&r).unwrap();
        // Communication reset keeps records, factory reset deletes the file.
        let rec = StoredRecord {
            slot: 0,
            subslot: 1,
            index: 0x10,
            data: vec![1],
        };
        let r = s.commit(&r, &Change::Record(rec.clone())).unwrap();
        let r = s
            .commit(&r, &Change::Reset(ResetMode::Communication))
            .unwrap();
        assert_eq!(
            (r.station_name.clone(), r.records.clone()),
            (None, vec![rec])
        );
        assert_eq!(loaded(&s).records.len(), 1);
        let r = s.commit(&r, &Change::Reset(ResetMode::Factory)).unwrap();
        // Everything erased; the erased name is remembered, so the configuration's name does
        // not come back at the next start.
        let factory = Remanent {
            name_cleared: true,
            ..Remanent::default()
        };
        assert_eq!(r, factory);
        assert_eq!(
            loaded(&s),
            Remanent {
                version: 1,
                ..factory
            }
        );
    }

    /// The same store made unwritable (its directory reached through a symlink swapped to a
    /// regular file: ENOTDIR, also for root): the commit fails, the file keeps the old value
    /// and, once writable again, holds it and no temporary file.
    #[test]
    fn a_failed_commit_changes_nothing_on_disk() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir(d.path().join("real")).unwrap();
        std::fs::write(d.path().join("blocker"), b"not a directory").unwrap();
        let link = d.path().join("link");
        let point = |to: &str| {
            let tmp = d.path().join("link.new");
            std::os::unix::fs::symlink(d.path().join(to), &tmp).unwrap();
            std::fs::rename(&tmp, &link).unwrap();
        };
        point("real");
        let s = Store::new(&link);
        let r = s
            .commit(
                &Remanent::default(),
                &Change::StationName(Some("kept".into())),
            )
            .unwrap();
        point("blocker");
        assert!(s
            .commit(&r, &Change::StationName(Some("refused".into())))
            .is_err());
        point("real");
        assert_eq!(loaded(&s).station_name.as_deref(), Some("kept"));
        assert_eq!(std::fs::read_dir(d.path().join("real")).unwrap().count(), 1);
        // The next commit works as before.
        let r = s
            .commit(&r, &Change::StationName(Some("next".into())))
            .unwrap();
        assert_eq!(loaded(&s).station_name, r.station_name);
    }

    /// A write interrupted by SIGKILL leaves its temporary file; the next start removes it
    /// (found by harness/tests/reliability_persistence_kill.rs: one file per kill piled up).
    #[test]
    fn interrupted_write_leaves_no_temp_file_after_restart() {
        let d = tempfile::tempdir().unwrap();
        let s = Store::new(d.path());
        s.save(&Remanent::default()).unwrap();
        let stale = d.path().join(format!(".{FILE_NAME}.tmp.4242"));
        std::fs::write(&stale, b"{\"version\": 1, \"stationName\": \"half").unwrap();
        assert!(matches!(s.load(), LoadOutcome::Loaded(_)));
        assert!(!stale.exists());
        assert!(s.path().exists());
        assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 1);
    }
}
