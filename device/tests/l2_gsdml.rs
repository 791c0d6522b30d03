//! GSDML: the shipped file matches the embedded default configuration, and the `pn-gsdml`
//! command's output for every shipped configuration is read back by an independent GSDML parser
//! (profinet-py's `profinet.gsdml`, PyPI package `profinet-py`) plus explicit structural checks
//! (python's xml.etree), and agrees with what the device reports (the same parsed config).

use std::path::{Path, PathBuf};
use std::process::Command;

use pn_device::config::RuntimeConfig;
use pn_device::gsdml::{generate, GsdmlOptions};
use pn_protocol::machine::cmdev::connect::ConnectLimits;
use serde_json::Value;

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn shipped_gsdml_matches_the_embedded_default_configuration() {
    let dir = manifest().join("gsdml");
    let files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "xml"))
        .collect();
    assert_eq!(files.len(), 1, "exactly one shipped GSDML: {files:?}");
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    // PI naming convention: GSDML-<schema>-<manufacturer>-<family>-<yyyymmdd>.xml
    let parts: Vec<&str> = name.trim_end_matches(".xml").split('-').collect();
    assert_eq!(parts[0], "GSDML");
    assert_eq!(parts[1], "V2.43");
    let date = parts.last().unwrap();
    assert!(
        date.len() == 8 && date.bytes().all(|b| b.is_ascii_digit()),
        "{name}"
    );
    let shipped = std::fs::read_to_string(&files[0]).unwrap();
    let cfg = RuntimeConfig::load(None).unwrap();
    let generated = generate(&cfg, &GsdmlOptions::default()).unwrap();
    assert!(
        shipped == generated,
        "device/gsdml/{name} is stale: regenerate with \
         `cargo run -p pn-device --bin pn-gsdml -- --out device/gsdml --date {date}`"
    );
    // The device symbol it names ships beside it.
    let icon = dir.join(pn_device::gsdml::icon_file_name(
        &cfg,
        &GsdmlOptions::default(),
    ));
    assert_eq!(
        std::fs::read(&icon).ok(),
        Some(pn_device::gsdml::device_icon_bmp()),
        "{} is missing or stale: regenerate as above",
        icon.display()
    );
}

const CHECK: &str = r#"
import json, sys
import xml.etree.ElementTree as ET
from profinet import gsdml as g

path = sys.argv[1]
ns = {"g": "http://www.profibus.com/GSDML/2003/11/DeviceProfile"}
root = ET.parse(path).getroot()
assert root.tag == "{%s}ISO15745Profile" % ns["g"], root.tag
problems = []
ids = [e.get("ID") for e in root.iter() if e.get("ID") is not None]
if len(ids) != len(set(ids)):
    problems.append("duplicate IDs")
texts = {t.get("TextId") for t in root.iter("{%s}Text" % ns["g"])}
for e in root.iter():
    t = e.get("TextId")
    if t is not None and not e.tag.endswith("}Text") and t not in texts:
        problems.append("undefined TextId " + t)
modules = {m.get("ID") for m in root.iter("{%s}ModuleItem" % ns["g"])}
for r in root.iter("{%s}ModuleItemRef" % ns["g"]):
    if r.get("ModuleItemTarget") not in modules:
        problems.append("dangling ModuleItemTarget " + r.get("ModuleItemTarget"))
    if not set(r.get("FixedInSlots", "").split()) <= set(r.get("AllowedInSlots", "").split()):
        problems.append("FixedInSlots outside AllowedInSlots")
dap = root.find(".//g:DeviceAccessPointItem", ns)
for attr in ["PNIO_Version", "ModuleIdentNumber", "MinDeviceInterval", "DNS_CompatibleName",
             "FixedInSlots", "ObjectUUID_LocalIndex", "PhysicalSlots"]:
    if dap.get(attr) is None:
        problems.append("DAP lacks " + attr)
itf = root.find(".//g:InterfaceSubmoduleItem", ns)
tp = itf.find(".//g:TimingProperties", ns)
ar = itf.find("g:ApplicationRelations", ns)
for a in ["CertificationInfo", "IOConfigData", "ModuleInfo"]:
    if dap.find("g:" + a, ns) is None:
        problems.append("DAP lacks " + a)
# Every category referenced is defined; the device symbol is a 70 x 40 BMP beside the file.
import os, struct
cats = {c.get("ID") for c in root.iter("{%s}CategoryItem" % ns["g"])}
for m in root.iter("{%s}ModuleInfo" % ns["g"]):
    if m.get("CategoryRef") is not None and m.get("CategoryRef") not in cats:
        problems.append("undefined CategoryRef " + m.get("CategoryRef"))
graphics = {gi.get("ID"): gi.get("GraphicFile") for gi in root.iter("{%s}GraphicItem" % ns["g"])}
refs = [r.get("GraphicItemTarget") for r in dap.iter("{%s}GraphicItemRef" % ns["g"])]
if not refs:
    problems.append("no device symbol")
for r in refs:
    bmp = os.path.join(os.path.dirname(path), str(graphics.get(r)) + ".bmp")
    if not os.path.exists(bmp):
        problems.append("missing " + bmp)
        continue
    head = open(bmp, "rb").read(26)
    if head[:2] != b"BM" or struct.unpack("<ii", head[18:26]) != (70, 40):
        problems.append("not a 70 x 40 BMP: " + bmp)

# The declarations: per VirtualSubmoduleItem its DataItems (type, length, bit offsets) and
# parameter records (index, length, Refs); the ChannelDiagList with its texts.
text = {t.get("TextId"): t.get("Value") for t in root.iter("{%s}Text" % ns["g"])}
declared = {}
for vs in root.iter("{%s}VirtualSubmoduleItem" % ns["g"]):
    io = {}
    for d in ["Input", "Output"]:
        el = vs.find("g:IOData/g:" + d, ns)
        items = [] if el is None else el.findall("g:DataItem", ns)
        io[d] = [[i.get("DataType"), i.get("Length"), text[i.get("TextId")],
                  [[int(b.get("BitOffset")), text[b.get("TextId")]]
                   for b in i.findall("g:BitDataItem", ns)]] for i in items]
        for i in items:
            if (i.get("UseAsBits") == "true") != bool(i.findall("g:BitDataItem", ns)):
                problems.append("UseAsBits without BitDataItems or the reverse")
    recs = []
    for r in vs.findall("g:RecordDataList/g:ParameterRecordDataItem", ns):
        children = [c.tag.split("}")[1] for c in r]
        if children[:1] != ["Name"]:
            problems.append("ParameterRecordDataItem does not start with Name: " + str(children))
        recs.append([int(r.get("Index")), int(r.get("Length")),
                     text[r.find("g:Name", ns).get("TextId")],
                     [[f.get("DataType"), int(f.get("ByteOffset")), f.get("BitOffset"),
                       f.get("BitLength"), f.get("DefaultValue"), f.get("AllowedValues"),
                       text[f.get("TextId")]] for f in r.findall("g:Ref", ns)]])
    order = [c.tag.split("}")[1] for c in vs]
    if order != sorted(order, key=["IOData", "RecordDataList", "ModuleInfo"].index):
        problems.append("VirtualSubmoduleItem children out of order: " + str(order))
    declared[vs.get("ID")] = {"io": io, "records": recs}
diag = [[int(c.get("ErrorType")), text[c.find("g:Name", ns).get("TextId")]]
        for c in root.findall(".//g:ChannelDiagList/g:ChannelDiagItem", ns)]
app = [c.tag.split("}")[1] for c in root.find(".//g:ApplicationProcess", ns)]
if not app.index("DeviceAccessPointList") < app.index("ChannelDiagList") < app.index("GraphicsList"):
    problems.append("ChannelDiagList out of place: " + str(app))

dev = g.load_gsdml(path)
d = dev.get_dap()
out = {
    "problems": problems,
    "vendor_id": dev.vendor_id, "device_id": dev.device_id,
    "dap_ident": d.module_ident,
    "dap_submodules": [[s.submodule_ident, s.input_length, s.output_length] for s in d.submodules],
    "system": [[s.subslot_number, s.submodule_ident] for s in d.system_submodules],
    "fixed_slots": d.fixed_slots,
    "modules": {m.id: {"ident": m.module_ident,
                        "subs": [[s.submodule_ident, s.input_length, s.output_length] for s in m.submodules]}
                for m in dev.modules.values()},
    "min_device_interval": int(dap.get("MinDeviceInterval")),
    "send_clock": tp.get("SendClock"), "reduction_ratio": tp.get("ReductionRatio"),
    "startup_mode": ar.get("StartupMode"), "rt_classes": itf.get("SupportedRT_Classes"),
    "protocols": itf.get("SupportedProtocols"),
    "dns_name": dap.get("DNS_CompatibleName"),
    "declared": declared, "diag": diag,
    "writeable_im": root.find(".//g:DeviceAccessPointItem/g:VirtualSubmoduleList/g:VirtualSubmoduleItem", ns).get("Writeable_IM_Records"),
}
print(json.dumps(out))
"#;

fn python_with_profinet() -> bool {
    Command::new("python3")
        .args(["-c", "import profinet.gsdml"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false)
}

fn check_with_profinet_py(cfg_path: Option<&Path>) {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pn-gsdml"));
    cmd.args(["--out", tmp.path().to_str().unwrap(), "--date", "20261123"]);
    if let Some(p) = cfg_path {
        cmd.args(["--config", p.to_str().unwrap()]);
    }
    let o = cmd.output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let written = PathBuf::from(String::from_utf8(o.stdout).unwrap().trim());
    assert!(written.starts_with(tmp.path()));
    let o = Command::new("python3")
        .args(["-c", CHECK, written.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["problems"], serde_json::json!([]), "{v}");

    let cfg = RuntimeConfig::load(cfg_path).unwrap();
    assert_eq!(v["vendor_id"], u64::from(cfg.vendor_id));
    assert_eq!(v["device_id"], u64::from(cfg.device_id));
    let dap = cfg.modules.iter().find(|m| m.slot == 0).unwrap();
    assert_eq!(v["dap_ident"], u64::from(dap.ident));
    for s in &dap.submodules {
        if s.subslot >= 0x8000 {
            assert!(
                v["system"]
                    .as_array()
                    .unwrap()
                    .contains(&serde_json::json!([s.subslot, s.ident])),
                "{v}"
            );
        }
    }
    // The cycles: exactly what the device's Connect check accepts for this configuration
    // (the protocol crate proves the lists and MinDeviceInterval state the accepted pairs).
    let limits = ConnectLimits {
        min_device_interval: cfg.min_device_interval,
    };
    let list = |v: Vec<u16>| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(v["min_device_interval"], cfg.min_device_interval);
    assert_eq!(v["send_clock"], list(limits.send_clock_factors()));
    assert_eq!(v["reduction_ratio"], list(limits.reduction_ratios()));
    // Every shipped configuration states 4 ms (docs/real-plc.md §6): no 1 ms offer any more.
    assert_eq!(v["min_device_interval"], 128, "4 ms in 31.25 us units");
    assert_eq!(v["startup_mode"], "Legacy;Advanced");
    assert_eq!(v["rt_classes"], "RT_CLASS_1");
    assert_eq!(v["protocols"], "SNMP;LLDP");
    assert_eq!(v["writeable_im"], "1 2 3 4");
    if !cfg.station_name.is_empty() {
        assert_eq!(v["dns_name"], cfg.station_name.as_str());
    }
    // Every configured module: in its slot, same ident numbers, GSDML Input = device ->
    // controller (config OutputLength), Output = controller -> device (config InputLength).
    for m in cfg.modules.iter().filter(|m| m.slot != 0) {
        let id = format!("IDM_{:08X}", m.ident);
        let gm = &v["modules"][&id];
        assert_eq!(gm["ident"], u64::from(m.ident), "{id}");
        assert!(
            v["fixed_slots"][&id]
                .as_array()
                .unwrap()
                .contains(&serde_json::json!(m.slot)),
            "{id} not fixed in slot {}",
            m.slot
        );
        let subs: Vec<Value> = m
            .submodules
            .iter()
            .map(|s| serde_json::json!([s.ident, s.output_length, s.input_length]))
            .collect();
        assert_eq!(gm["subs"], Value::Array(subs), "{id}");
        for s in &m.submodules {
            let sid = format!("IDSM_{:08X}_{}", m.ident, s.subslot);
            check_declarations(&v["declared"][&sid], s);
        }
    }
    // The channel diagnosis texts: the protocol crate's table, its standard types.
    let names = pn_protocol::wire::pnio::diagnosis::channel_error_type::NAMES;
    let diag = v["diag"].as_array().unwrap();
    let standard: Vec<_> = names.iter().filter(|(t, _)| *t < 0x8000).collect();
    assert_eq!(diag.len(), standard.len(), "{diag:?}");
    for (t, name) in standard {
        let named = |d: &Value| d[0] == *t && d[1].as_str().unwrap().eq_ignore_ascii_case(name);
        assert!(diag.iter().any(named), "{t}: {diag:?}");
    }
    check_controller_writes_the_defaults(&written, &cfg);
}

/// The GSDML states a submodule's declared items and parameter records as configured
/// (GSDML Input = the configuration's OutputItems, Output = its InputItems).
fn check_declarations(got: &Value, s: &pn_device::dataplane::SubmoduleConfig) {
    use pn_device_formats::items::{IoItem, IoType};
    use pn_protocol::machine::cmdev::params::FieldKind;
    let items = |items: &[IoItem]| -> Value {
        items
            .iter()
            .map(|i| {
                let len = match i.data_type {
                    IoType::OctetString(n) => Value::from(n.to_string()),
                    _ => Value::Null,
                };
                serde_json::json!([i.data_type.gsdml_name(), len, i.name, i.bits])
            })
            .collect()
    };
    if !s.output_items.is_empty() {
        assert_eq!(got["io"]["Input"], items(&s.output_items), "{got}");
    }
    if !s.input_items.is_empty() {
        assert_eq!(got["io"]["Output"], items(&s.input_items), "{got}");
    }
    let field = |f: &pn_protocol::machine::cmdev::params::ParamField| {
        let (dt, bo, bl) = match f.kind {
            FieldKind::Value(t) => (t.name(), Value::Null, Value::Null),
            FieldKind::Bits { offset, length: 1 } => {
                ("Bit", offset.to_string().into(), Value::Null)
            }
            FieldKind::Bits { offset, length } => (
                "BitArea",
                offset.to_string().into(),
                length.to_string().into(),
            ),
        };
        let allowed = f.allowed.to_gsdml();
        let allowed = if allowed.is_empty() {
            Value::Null
        } else {
            allowed.into()
        };
        serde_json::json!([
            dt,
            f.byte_offset,
            bo,
            bl,
            f.default.to_string(),
            allowed,
            f.name
        ])
    };
    let recs: Vec<Value> = s
        .records
        .iter()
        .map(|r| {
            let refs: Vec<Value> = r.fields.iter().map(field).collect();
            serde_json::json!([r.index, r.length, r.name, refs])
        })
        .collect();
    assert_eq!(got["records"], Value::Array(recs), "{got}");
}

/// pn-controller reads the emitted GSDML and writes every declared record with exactly the
/// defaults the device itself starts with (and its CMDEV check accepts).
fn check_controller_writes_the_defaults(gsdml: &Path, cfg: &RuntimeConfig) {
    let g = pn_controller::Gsdml::load(gsdml).unwrap();
    for m in cfg.modules.iter().filter(|m| m.slot != 0) {
        let gm = g.module(&format!("IDM_{:08X}", m.ident)).unwrap();
        for (s, gs) in m.submodules.iter().zip(&gm.submodules) {
            let want: Vec<(u16, Vec<u8>)> =
                s.records.iter().map(|r| (r.index, r.defaults())).collect();
            let got: Vec<(u16, Vec<u8>)> = gs
                .params
                .iter()
                .map(|p| (p.index, p.data.clone()))
                .collect();
            assert_eq!(got, want, "slot {} subslot {}", m.slot, s.subslot);
            for r in &s.records {
                assert_eq!(r.check(&r.defaults()), Ok(()));
            }
        }
    }
}

#[test]
fn pn_gsdml_output_is_read_back_by_profinet_py_for_every_shipped_configuration() {
    if !pn_testkit::env::require(
        python_with_profinet(),
        "python3 with profinet-py (pip install -r ci/requirements.txt)",
    ) {
        return;
    }
    check_with_profinet_py(None);
    let examples = manifest().join("config/examples");
    let mut n = 0;
    for e in std::fs::read_dir(examples).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "xml") {
            check_with_profinet_py(Some(&p));
            n += 1;
        }
    }
    assert!(n >= 2);
}

#[test]
fn pn_gsdml_refuses_a_broken_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let bad = tmp.path().join("bad.xml");
    std::fs::write(
        &bad,
        "<PnDeviceConfiguration><VendorID>1</VendorID></PnDeviceConfiguration>",
    )
    .unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_pn-gsdml"))
        .args(["--config", bad.to_str().unwrap(), "--stdout"])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("DeviceID"));
    let o = Command::new(env!("CARGO_BIN_EXE_pn-gsdml"))
        .args(["--date", "2026-11-23"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
}
