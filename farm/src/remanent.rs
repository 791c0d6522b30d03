//! Remanent data of the farm's devices (`--state-dir DIR`): what a PLC set permanently over
//! DCP (NameOfStation, IP suite) and the records it wrote (I&M1-4, user records) survive a
//! restart of the farm.
//!
//! One file per device, `DIR/<mac>.json` (`02-00-50-4e-00-01.json`: the MAC is the one
//! identity of a device the PLC cannot change), in pn-device's format and written by
//! pn-device's store ([`pn_device::persist::Store::named`]): temp file, `fsync`, `rename`,
//! directory `fsync`. As in the daemon, a DCP Set or record write is answered only after its
//! value is on disk; a write that fails is refused on the wire (DCP BlockError 5, record
//! write error) and changes nothing.

use std::path::Path;
use std::sync::{Arc, Mutex};

use pn_device::dataplane::{StackConfig, StackEvent};
use pn_device::persist::{Change, LoadOutcome, Remanent, Store, StoredIp};
use pn_protocol::machine::dcp_responder::{DcpEvent, DurableHook};

/// The file of the device with this MAC inside the state directory.
pub fn file_name(mac: [u8; 6]) -> String {
    let m: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}.json", m.join("-"))
}

/// One device's store and the value it holds (memory equal to the file).
pub struct DeviceStore {
    store: Store,
    current: Mutex<Remanent>,
}

impl std::fmt::Debug for DeviceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceStore")
            .field("path", &self.store.path())
            .finish_non_exhaustive()
    }
}

impl DeviceStore {
    /// Open the store of the device with `mac` in `dir` and apply what it holds to `cfg`
    /// (NameOfStation, IP suite, I&M1-4, records), as pn-device starts from its remanent
    /// data. The configuration's NameOfStation is recorded as the daemon does: a changed one
    /// wins over an assigned name (docs/decisions.md §21). A corrupt file is quarantined and
    /// factory values are used (logged).
    pub fn open(dir: &Path, mac: [u8; 6], cfg: &mut StackConfig) -> Arc<DeviceStore> {
        let store = Store::named(dir, &file_name(mac));
        let loaded = match store.load() {
            LoadOutcome::Missing => Remanent::default(),
            LoadOutcome::Loaded(r) => r,
            LoadOutcome::Corrupt(e) => {
                tracing::error!("persistence: {e}");
                Remanent::default()
            }
        };
        let change = Change::ConfigStationName(cfg.station_name.clone());
        let r = store.commit(&loaded, &change).unwrap_or_else(|e| {
            tracing::warn!(
                "persistence: {}: cannot record the configuration's station name: {e}",
                store.path().display()
            );
            change.applied_to(&loaded)
        });
        apply(cfg, &r);
        Arc::new(DeviceStore {
            store,
            current: Mutex::new(r),
        })
    }

    /// Make the remanent part of `ev` durable (nothing to do for other events).
    pub fn commit(&self, ev: &StackEvent) -> Result<(), String> {
        let Some(change) = pn_device::persist::change_of_event(ev) else {
            return Ok(());
        };
        let mut cur = self.current.lock().unwrap_or_else(|p| p.into_inner());
        match self.store.commit(&cur, &change) {
            Ok(next) => {
                *cur = next;
                Ok(())
            }
            Err(e) => Err(format!("{}: {e}", self.store.path().display())),
        }
    }

    /// The DCP responder's durability hook: a permanent Set is stored before it is answered.
    pub fn dcp_hook(self: &Arc<DeviceStore>) -> DurableHook {
        let s = self.clone();
        Arc::new(move |ev: &DcpEvent| {
            let Some(se) = pn_device::stack::dcp::to_stack_event(ev, None) else {
                return Ok(());
            };
            s.commit(&se).inspect_err(|e| {
                tracing::error!("DCP Set refused, the value cannot be stored: {e}");
            })
        })
    }

    /// What is stored now.
    pub fn current(&self) -> Remanent {
        self.current
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// `cfg` as the device starts with remanent data `r` (pn-device's `build_stack_config`).
pub fn apply(cfg: &mut StackConfig, r: &Remanent) {
    cfg.station_name = r.start_station_name(&cfg.station_name);
    let ip = r.start_ip(StoredIp {
        ip: cfg.ip,
        mask: cfg.mask,
        gateway: cfg.gateway,
    });
    cfg.ip = ip.ip;
    cfg.mask = ip.mask;
    cfg.gateway = ip.gateway;
    cfg.im = r.im.clone();
    cfg.records = r.records.clone();
}

#[cfg(test)]
mod tests {
    use super::*;
    use pn_device::dataplane::StoredRecord;
    use std::net::Ipv4Addr;

    fn cfg() -> StackConfig {
        let xml = pn_testkit::daemon::DeviceXml::new("unused").to_xml();
        let rc = pn_device_formats::config::RuntimeConfig::parse(&xml, "test").unwrap();
        let mut c = crate::plant::stack_config(
            &rc,
            "eth0",
            "farm-dev-1",
            Ipv4Addr::new(10, 0, 0, 5),
            Ipv4Addr::new(255, 255, 255, 0),
            Ipv4Addr::UNSPECIFIED,
        );
        c.station_name = "farm-dev-1".into();
        c
    }

    #[test]
    fn file_names_follow_the_mac() {
        assert_eq!(
            file_name([0x02, 0, 0x50, 0x4e, 0, 0x0a]),
            "02-00-50-4e-00-0a.json"
        );
    }

    #[test]
    fn permanent_name_ip_and_im_survive_a_reopen() {
        let d = tempfile::tempdir().unwrap();
        let mac = [2, 0, 0x50, 0x4e, 0, 1];
        let mut c = cfg();
        let s = DeviceStore::open(d.path(), mac, &mut c);
        assert_eq!(c.station_name, "farm-dev-1");
        let hook = s.dcp_hook();
        hook(&DcpEvent::NameAssigned {
            name: "valve-7".into(),
            permanent: true,
        })
        .unwrap();
        hook(&DcpEvent::IpAssigned {
            ip: Ipv4Addr::new(10, 0, 0, 77),
            mask: Ipv4Addr::new(255, 255, 0, 0),
            gateway: Ipv4Addr::UNSPECIFIED,
            permanent: true,
        })
        .unwrap();
        let mut im1 = vec![0x00, 0x21, 0x00, 0x38, 0x01, 0x00];
        im1.extend_from_slice(&[b'T'; 32]);
        im1.extend_from_slice(&[b'L'; 22]);
        s.commit(&StackEvent::RecordWritten {
            slot: 0,
            subslot: 1,
            index: 0xAFF1,
            data: im1.clone(),
        })
        .unwrap();
        drop(s);
        let mut c = cfg();
        let s = DeviceStore::open(d.path(), mac, &mut c);
        assert_eq!(c.station_name, "valve-7");
        assert_eq!(c.ip, Ipv4Addr::new(10, 0, 0, 77));
        assert_eq!(c.mask, Ipv4Addr::new(255, 255, 0, 0));
        assert_eq!(c.im.tag_function, "T".repeat(32));
        assert_eq!(
            c.records,
            vec![StoredRecord {
                slot: 0,
                subslot: 1,
                index: 0xAFF1,
                data: im1
            }]
        );
        // A temporary Set erases the stored name (pn-device's rule).
        s.dcp_hook()(&DcpEvent::NameAssigned {
            name: "tmp".into(),
            permanent: false,
        })
        .unwrap();
        assert_eq!(s.current().station_name, None);
        // Another device's file is its own.
        let mut c2 = cfg();
        let _ = DeviceStore::open(d.path(), [2, 0, 0x50, 0x4e, 0, 2], &mut c2);
        assert_eq!(c2.station_name, "farm-dev-1");
        assert_eq!(c2.ip, Ipv4Addr::new(10, 0, 0, 5));
    }
}
