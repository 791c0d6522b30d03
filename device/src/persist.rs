//! Remanent data (station name and IP set permanently over DCP, I&M1-4, written records).
//!
//! One JSON file `<Paths:PersistenceDir>/remanent.json`, written atomically: temp file in the
//! same directory, `fsync`, `rename` over the old file, `fsync` of the directory. A reader
//! therefore sees either the old or the new content, also after `kill -9` or power loss.
//! A file that cannot be parsed is renamed to `remanent.json.corrupt` (kept for inspection),
//! reported (log + alarm) and factory values are used; the daemon never stops because of it.
//!
//! Every change goes through [`Store::commit`]: the new value is computed from the current
//! one, written durably, and only then handed back to become the in-memory value. The stack
//! answers a record write or DCP Set only after that returned (docs/decisions.md, "Remanent
//! data is acknowledged after it is durable"), so the file is never older than what a
//! controller was told, and a failed write changes nothing.

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::dataplane::{ImRemanent, ResetMode, StackEvent, StoredRecord};

/// File name inside the persistence directory.
pub const FILE_NAME: &str = "remanent.json";

/// IP parameters stored after a permanent DCP Set IP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredIp {
    pub ip: Ipv4Addr,
    pub mask: Ipv4Addr,
    pub gateway: Ipv4Addr,
}

/// Everything remanent.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Remanent {
    /// File format version (1).
    pub version: u32,
    /// A NameOfStation the controller assigned permanently (DCP Set, permanent).
    pub station_name: Option<String>,
    /// The NameOfStation was erased (ResetToFactory, or a temporary DCP Set, which erases
    /// the stored name): without an assigned name the device comes up with an empty one, not
    /// with the configuration's (docs/decisions.md §21).
    pub name_cleared: bool,
    /// The configuration's StationName when it was last taken as the device's name: a new
    /// configuration with another StationName is the operator's decision and wins over an
    /// erased or an assigned name (`None` in files written before this field existed).
    pub config_station_name: Option<String>,
    pub ip: Option<StoredIp>,
    pub im: ImRemanent,
    pub records: Vec<StoredRecord>,
}

impl Remanent {
    /// The NameOfStation the device starts with: the assigned one, else empty after an
    /// erasure, else the configuration's.
    pub fn start_station_name(&self, config_name: &str) -> String {
        match (&self.station_name, self.name_cleared) {
            (Some(n), _) => n.clone(),
            (None, true) => String::new(),
            (None, false) => config_name.to_string(),
        }
    }
}

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

/// One change of the remanent data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// DCP Set NameOfStation: `Some` permanent, `None` temporary (erases the stored name,
    /// docs/decisions.md §13).
    StationName(Option<String>),
    /// DCP Set IP: `Some` permanent, `None` temporary (erases the stored suite).
    Ip(Option<StoredIp>),
    /// A written record (I&M1-4 or a user record).
    Record(StoredRecord),
    /// ResetToFactory / `POST /api/reset`: communication parameters erased, or everything
    /// (the NameOfStation stays erased: the file keeps that).
    Reset(ResetMode),
    /// The configuration in force has this StationName (at start and after a reload): when it
    /// differs from the one last taken, it becomes the device's name again.
    ConfigStationName(String),
}

impl Change {
    /// The remanent change an event of the stack carries, if any.
    pub fn of_event(ev: &StackEvent) -> Option<Change> {
        Some(match ev {
            StackEvent::DcpNameAssigned { name, permanent } => {
                Change::StationName(permanent.then(|| name.clone()))
            }
            StackEvent::DcpIpAssigned {
                ip,
                mask,
                gateway,
                permanent,
                ..
            } => Change::Ip(permanent.then_some(StoredIp {
                ip: *ip,
                mask: *mask,
                gateway: *gateway,
            })),
            StackEvent::DcpResetToFactory { mode, .. } => Change::Reset(*mode),
            StackEvent::RecordWritten {
                slot,
                subslot,
                index,
                data,
            } => Change::Record(StoredRecord {
                slot: *slot,
                subslot: *subslot,
                index: *index,
                data: data.clone(),
            }),
            _ => return None,
        })
    }

    /// `current` with this change applied.
    pub fn applied_to(&self, current: &Remanent) -> Remanent {
        let mut r = current.clone();
        match self {
            Change::StationName(n) => {
                r.station_name = n.clone();
                r.name_cleared = n.is_none();
            }
            Change::Ip(ip) => r.ip = *ip,
            Change::Record(rec) => apply_record(&mut r, rec.clone()),
            Change::Reset(ResetMode::Communication) => {
                r.station_name = None;
                r.name_cleared = true;
                r.ip = None;
            }
            Change::Reset(ResetMode::Factory) => {
                r = Remanent {
                    name_cleared: true,
                    config_station_name: current.config_station_name.clone(),
                    ..Remanent::default()
                }
            }
            Change::ConfigStationName(name) => {
                if r.config_station_name.as_deref() != Some(name.as_str()) {
                    // A first record (older file) changes nothing else; a changed
                    // configuration brings its name back.
                    if r.config_station_name.is_some() {
                        r.station_name = None;
                        r.name_cleared = false;
                    }
                    r.config_station_name = Some(name.clone());
                }
            }
        }
        r
    }
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

/// Apply a record write to the remanent data: replace a record with the same address, and for
/// I&M1-4 (index 0xAFF1..0xAFF4) decode the fields (data including the 6-byte BlockHeader).
pub fn apply_record(r: &mut Remanent, rec: StoredRecord) {
    let body = rec.data.get(6..).unwrap_or(&[]);
    let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
    match rec.index {
        0xAFF1 => {
            r.im.tag_function = text(body.get(..32.min(body.len())).unwrap_or(&[]));
            r.im.tag_location = text(body.get(32..54.min(body.len()).max(32)).unwrap_or(&[]));
        }
        0xAFF2 => r.im.date = text(body.get(..16.min(body.len())).unwrap_or(&[])),
        0xAFF3 => r.im.descriptor = text(body.get(..54.min(body.len())).unwrap_or(&[])),
        0xAFF4 => r.im.signature = body.get(..54.min(body.len())).unwrap_or(&[]).to_vec(),
        _ => {}
    }
    r.records
        .retain(|x| !(x.slot == rec.slot && x.subslot == rec.subslot && x.index == rec.index));
    r.records.push(rec);
    r.records.sort_by_key(|x| (x.slot, x.subslot, x.index));
    // Bound the store: at most 256 records are kept (oldest addresses beyond are dropped).
    r.records.truncate(256);
}

#[cfg(test)]
mod tests {
    use super::*;

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

    /// The NameOfStation a start uses (docs/decisions.md §21): the configuration's until the
    /// name is assigned or erased; empty after ResetToFactory or a temporary Set; the
    /// configuration's again when the configuration's StationName changes.
    #[test]
    fn station_name_rules() {
        let apply = |r: &Remanent, c: Change| c.applied_to(r);
        let fresh = apply(
            &Remanent::default(),
            Change::ConfigStationName("cfg".into()),
        );
        assert_eq!(fresh.start_station_name("cfg"), "cfg");
        let assigned = apply(&fresh, Change::StationName(Some("plc-given".into())));
        assert_eq!(assigned.start_station_name("cfg"), "plc-given");
        // The same configuration at the next start changes nothing.
        let again = apply(&assigned, Change::ConfigStationName("cfg".into()));
        assert_eq!(again, assigned);
        let temporary = apply(&assigned, Change::StationName(None));
        assert_eq!(temporary.start_station_name("cfg"), "");
        for mode in [ResetMode::Communication, ResetMode::Factory] {
            let reset = apply(&assigned, Change::Reset(mode));
            assert_eq!(reset.start_station_name("cfg"), "", "{mode:?}");
            let same_cfg = apply(&reset, Change::ConfigStationName("cfg".into()));
            assert_eq!(same_cfg.start_station_name("cfg"), "", "{mode:?}");
            let new_cfg = apply(&reset, Change::ConfigStationName("cfg2".into()));
            assert_eq!(new_cfg.start_station_name("cfg2"), "cfg2", "{mode:?}");
        }
        // A file from before the field existed keeps its assigned name.
        let old = Remanent {
            station_name: Some("kept".into()),
            ..Remanent::default()
        };
        let upgraded = apply(&old, Change::ConfigStationName("cfg".into()));
        assert_eq!(upgraded.start_station_name("cfg"), "kept");
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
