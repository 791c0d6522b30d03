//! GSDML generation: the device description file an engineering tool (TIA Portal, CODESYS)
//! needs to configure a controller for this device, generated from the same runtime
//! configuration XML the daemon loads, so module/submodule ident numbers, slots, subslots and IO
//! lengths always agree with what the device reports.
//!
//! Command: `pn-gsdml` (device/src/bin/pn-gsdml.rs). The file shipped in `device/gsdml/` is this
//! generator's output for the embedded default configuration (a test keeps them equal).
//!
//! # Directions
//! The runtime configuration counts from the device's point of view of the API:
//! `InputLength` = bytes the controller sends to the device, `OutputLength` = bytes the device
//! sends to the controller. GSDML counts from the controller's (PLC's) point of view: `<Input>`
//! = data the device sends (PLC inputs), `<Output>` = data the controller sends (PLC outputs).
//! So `OutputLength` becomes `<Input>` and `InputLength` becomes `<Output>`.
//!
//! # Choices (PROFINET GSDML V2.43 schema; checked against p-net's sample GSDML and its
//! documentation `doc/creating_gsdml_files.rst`, the GSDMLs in /work/shared/fixtures/gsdml/)
//! * `PNIO_Version="V2.4"` with the attributes TIA's checker requires from V2.31 on:
//!   `CertificationInfo` (conformance class B: SNMP and LLDP are implemented),
//!   `LLDP_NoD_Supported="true"`, `MultipleWriteSupported="true"`, `ResetToFactoryModes="2"`
//!   (reset communication parameters, DCP ResetToFactory mode 2), `PTP_BoundarySupported` and
//!   `DCP_BoundarySupported="true"` (the device accepts PDPortDataAdjust/PDInterfaceAdjust).
//! * Interface submodule: RT_CLASS_1 only, `SupportedProtocols="SNMP;LLDP"`,
//!   `StartupMode="Legacy;Advanced"`.
//! * Cycles: `MinDeviceInterval` is the configuration's `MinUpdateTimeUs`; the `SendClock` and
//!   `ReductionRatio` lists come from the same rule the device's Connect check applies
//!   (`ConnectLimits::send_clock_factors`/`reduction_ratios` in the protocol crate), so the
//!   pairs an engineering tool offers are exactly the ones the device accepts.
//! * Port submodule: MAU types 16 (100BASE-TX FD, also what the device reports on virtual
//!   links) and 30 (1000BASE-T FD).
//! * Every configured module is fixed in its slot(s) (`FixedInSlots`) and every submodule in its
//!   subslot (`FixedInSubslots`): the device builds its layout from the configuration, so the
//!   engineering tool must place exactly that. Modules with the same ModuleIdentNumber must have
//!   the same submodules (one `ModuleItem` serves all their slots).
//! * IO data: the submodule's declared items (`<InputItems>`/`<OutputItems>` of the
//!   configuration: `DataItem`s with their types, `UseAsBits` and `BitDataItem`s where bits are
//!   named), else one `OctetString` item per direction (Length = bytes); "All items
//!   consistency" either way.
//! * Parameter records: a `RecordDataList` with one `ParameterRecordDataItem` per declared
//!   record, a `Ref` per field with its type (`Bit`/`BitArea` for bit fields), default and
//!   allowed values, the same declaration CMDEV checks Writes against.
//! * A `ChannelDiagList` naming the standard ChannelErrorTypes (the protocol crate's table),
//!   so an engineering tool shows the device's diagnosis in words.
//! * `Writeable_IM_Records` from the configured I&M supported bits (I&M1..4).
//! * A device symbol (`Graphics`/`GraphicsList`): a 70 × 40 pixel BMP, the size engineering
//!   tools show in their catalogue and network view, written beside the XML by `pn-gsdml`
//!   ([`icon_file_name`], [`device_icon_bmp`]); `GraphicFile` names it without the extension.
//! * A `CategoryList` that sorts the modules in the tool's catalogue by their IO direction
//!   (inputs, outputs, inputs and outputs, no IO data).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pn_protocol::machine::cmdev::connect::ConnectLimits;

use crate::config::RuntimeConfig;
use crate::dataplane::ModuleConfig;

mod items;

/// GSDML schema version of the generated file (also in the file name).
pub const SCHEMA_VERSION: &str = "V2.43";
/// Default manufacturer name (VendorName and the file name).
pub const DEFAULT_VENDOR_NAME: &str = "pn-device";

/// Options beyond the runtime configuration.
#[derive(Debug, Clone)]
pub struct GsdmlOptions {
    pub vendor_name: String,
}

impl Default for GsdmlOptions {
    fn default() -> Self {
        GsdmlOptions {
            vendor_name: DEFAULT_VENDOR_NAME.into(),
        }
    }
}

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

fn name_part(s: &str) -> String {
    let v: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '-'
            }
        })
        .collect();
    let v = v.trim_matches('-').to_string();
    if v.is_empty() {
        "device".into()
    } else {
        v
    }
}

/// The PI file name: `GSDML-V2.43-<manufacturer>-<device family>-<yyyymmdd>.xml`.
pub fn file_name(cfg: &RuntimeConfig, opts: &GsdmlOptions, date_yyyymmdd: &str) -> String {
    format!(
        "GSDML-{SCHEMA_VERSION}-{}-{}-{}.xml",
        name_part(&opts.vendor_name),
        name_part(&cfg.device_name),
        date_yyyymmdd
    )
}

/// The device symbol's file stem (`GraphicFile`): `GSDML-<manufacturer>-<device family>`.
fn icon_stem(cfg: &RuntimeConfig, opts: &GsdmlOptions) -> String {
    format!(
        "GSDML-{}-{}",
        name_part(&opts.vendor_name),
        name_part(&cfg.device_name)
    )
}

/// The device symbol's file name, to be written beside the GSDML file.
pub fn icon_file_name(cfg: &RuntimeConfig, opts: &GsdmlOptions) -> String {
    format!("{}.bmp", icon_stem(cfg, opts))
}

/// Width and height of the device symbol in pixels.
const ICON_SIZE: (usize, usize) = (70, 40);

/// The device symbol: an uncompressed 24-bit Windows bitmap (BITMAPINFOHEADER), 70 × 40: a
/// grey housing with a dark front, one green RJ45 port LED and a status LED. Drawn here so the
/// file is ours and always matches the XML that names it.
pub fn device_icon_bmp() -> Vec<u8> {
    let (w, h) = ICON_SIZE;
    let row = (w * 3).div_ceil(4) * 4;
    let data_len = row * h;
    let mut b = Vec::with_capacity(54 + data_len);
    b.extend_from_slice(b"BM");
    b.extend_from_slice(&((54 + data_len) as u32).to_le_bytes());
    b.extend_from_slice(&[0; 4]);
    b.extend_from_slice(&54u32.to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes()); // BITMAPINFOHEADER
    b.extend_from_slice(&(w as i32).to_le_bytes());
    b.extend_from_slice(&(h as i32).to_le_bytes()); // positive: bottom-up rows
    b.extend_from_slice(&1u16.to_le_bytes()); // planes
    b.extend_from_slice(&24u16.to_le_bytes()); // bits per pixel
    b.extend_from_slice(&0u32.to_le_bytes()); // BI_RGB
    b.extend_from_slice(&(data_len as u32).to_le_bytes());
    b.extend_from_slice(&2835i32.to_le_bytes()); // 72 dpi
    b.extend_from_slice(&2835i32.to_le_bytes());
    b.extend_from_slice(&[0; 8]); // palette: none
    let pixel = |x: usize, y: usize| -> [u8; 3] {
        // (x, y) from the top left; colours as RGB.
        let inside = |x0, y0, x1, y1| (x0..x1).contains(&x) && (y0..y1).contains(&y);
        let rgb: [u8; 3] = if !inside(4, 4, 66, 36) {
            [255, 255, 255]
        } else if !inside(6, 6, 64, 34) {
            [90, 90, 90]
        } else if inside(12, 12, 16, 15) || inside(54, 10, 59, 14) {
            [0, 200, 0] // the port's link LED and the status LED
        } else if inside(10, 10, 24, 22) {
            [40, 40, 40] // the port
        } else if inside(30, 26, 60, 29) {
            [0, 120, 190] // the label stripe
        } else {
            [200, 200, 200]
        };
        [rgb[2], rgb[1], rgb[0]] // BMP stores BGR
    };
    for y in (0..h).rev() {
        for x in 0..w {
            b.extend_from_slice(&pixel(x, y));
        }
        b.resize(b.len() + row - w * 3, 0);
    }
    b
}

/// The catalogue category of a module by its IO data (GSDML `CategoryList`).
fn category(m: &ModuleConfig) -> (&'static str, &'static str) {
    let to_plc = m.submodules.iter().any(|s| s.output_length > 0);
    let from_plc = m.submodules.iter().any(|s| s.input_length > 0);
    match (to_plc, from_plc) {
        (true, true) => ("IDC_IO", "Inputs and outputs"),
        (true, false) => ("IDC_I", "Inputs"),
        (false, true) => ("IDC_O", "Outputs"),
        (false, false) => ("IDC_NONE", "No IO data"),
    }
}

/// Today's date (UTC) as yyyymmdd.
pub fn today() -> String {
    let ts = crate::util::now_rfc3339();
    ts.get(0..10).unwrap_or("19700101").replace('-', "")
}

/// A DNS-compatible default station name for `DNS_CompatibleName`.
fn dns_name(cfg: &RuntimeConfig) -> String {
    if !cfg.station_name.is_empty() {
        return cfg.station_name.clone();
    }
    let n: String = cfg
        .device_name
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let n = n.trim_matches('-').to_string();
    if n.is_empty() {
        "pn-device".into()
    } else {
        n
    }
}

/// Group the non-DAP modules by ModuleIdentNumber; all slots of one ident must carry the same
/// submodules.
fn module_groups(cfg: &RuntimeConfig) -> Result<BTreeMap<u32, (Vec<u16>, &ModuleConfig)>, String> {
    let mut groups: BTreeMap<u32, (Vec<u16>, &ModuleConfig)> = BTreeMap::new();
    for m in cfg.modules.iter().filter(|m| m.slot != 0) {
        match groups.get_mut(&m.ident) {
            None => {
                groups.insert(m.ident, (vec![m.slot], m));
            }
            Some((slots, first)) => {
                if first.submodules != m.submodules {
                    return Err(format!(
                        "modules in slots {} and {} have ModuleIdentNumber {:#010x} but different \
                         submodules; one ident number must describe one module type",
                        first.slot, m.slot, m.ident
                    ));
                }
                slots.push(m.slot);
            }
        }
    }
    Ok(groups)
}

fn slot_list(slots: &[u16]) -> String {
    slots
        .iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(" ")
}

struct Texts(BTreeMap<String, String>);

impl Texts {
    fn add(&mut self, id: &str, value: &str) -> String {
        self.0.insert(id.to_string(), value.to_string());
        id.to_string()
    }
}

/// Generate the GSDML text for `cfg`. Deterministic (no date inside), UTF-8.
pub fn generate(cfg: &RuntimeConfig, opts: &GsdmlOptions) -> Result<String, String> {
    let dap = cfg
        .modules
        .iter()
        .find(|m| m.slot == 0)
        .ok_or("the configuration has no DAP (slot 0)")?;
    let interface = dap
        .submodules
        .iter()
        .find(|s| s.subslot == 0x8000)
        .ok_or("the DAP has no interface submodule (subslot 0x8000)")?;
    let ports: Vec<_> = dap
        .submodules
        .iter()
        .filter(|s| (0x8001..=0x80FF).contains(&s.subslot))
        .collect();
    if ports.is_empty() {
        return Err("the DAP has no port submodule (subslot 0x8001)".into());
    }
    let groups = module_groups(cfg)?;
    let max_slot = cfg.modules.iter().map(|m| m.slot).max().unwrap_or(0);
    let vendor = esc(&opts.vendor_name);
    let (p, a, b, c) = cfg.im0.software_revision;
    let sw = format!("{p}{a}.{b}.{c}");
    let writeable_im: Vec<String> = (1..=4)
        .filter(|i| cfg.im0.im_supported & (1 << i) != 0)
        .map(|i: u16| i.to_string())
        .collect();
    let limits = ConnectLimits {
        min_device_interval: cfg.min_device_interval,
    };
    let list = |v: Vec<u16>| {
        v.iter()
            .map(|n| n.to_string())
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (send_clocks, ratios) = (
        list(limits.send_clock_factors()),
        list(limits.reduction_ratios()),
    );
    let mut t = Texts(BTreeMap::new());
    let mut x = String::new();
    prolog(&mut x, &mut t, cfg, &vendor);
    x.push_str("    <ApplicationProcess>\n      <DeviceAccessPointList>\n");
    let dap_item = DapItem {
        dap,
        max_slot,
        min_device_interval: limits.min_device_interval,
        writeable_im: &writeable_im,
        vendor: &vendor,
        sw: &sw,
    };
    dap_item.emit(&mut x, &mut t, cfg, &groups);
    system_defined(
        &mut x,
        &mut t,
        interface.ident,
        &ports,
        &send_clocks,
        &ratios,
    );
    x.push_str(
        "          <Graphics>\n            <GraphicItemRef Type=\"DeviceSymbol\" \
         GraphicItemTarget=\"IDG_Device\"/>\n          </Graphics>\n",
    );
    x.push_str("        </DeviceAccessPointItem>\n      </DeviceAccessPointList>\n");
    let categories = module_list(&mut x, &mut t, cfg, &groups, &sw);
    epilog(&mut x, &mut t, cfg, opts, &categories);
    Ok(x)
}

/// The DeviceAccessPointItem's own part: its attributes, ModuleInfo, the useable modules and
/// the DAP's virtual submodules.
struct DapItem<'a> {
    dap: &'a ModuleConfig,
    max_slot: u16,
    min_device_interval: u32,
    writeable_im: &'a [String],
    vendor: &'a str,
    sw: &'a str,
}

impl DapItem<'_> {
    fn emit(
        &self,
        x: &mut String,
        t: &mut Texts,
        cfg: &RuntimeConfig,
        groups: &BTreeMap<u32, (Vec<u16>, &ModuleConfig)>,
    ) {
        let (vendor, sw, max_slot) = (self.vendor, self.sw, self.max_slot);
        let dap_name = t.add("IDT_NAME_DAP", &cfg.im0.product_name);
        let dap_info = t.add(
            "IDT_INFO_DAP",
            &format!(
                "{} - generated for station {}",
                cfg.im0.product_name,
                dns_name(cfg)
            ),
        );
        let _ = writeln!(
            x,
            "        <DeviceAccessPointItem ID=\"IDD_1\" PNIO_Version=\"V2.4\" \
             RequiredSchemaVersion=\"V2.4\" PhysicalSlots=\"0..{max_slot}\" \
             ModuleIdentNumber=\"{:#010X}\" MinDeviceInterval=\"{}\" DNS_CompatibleName=\"{}\" \
             FixedInSlots=\"0\" ObjectUUID_LocalIndex=\"1\" DeviceAccessSupported=\"false\" \
             MultipleWriteSupported=\"true\" SharedDeviceSupported=\"false\" \
             CheckDeviceID_Allowed=\"true\" NameOfStationNotTransferable=\"false\" \
             LLDP_NoD_Supported=\"true\" ResetToFactoryModes=\"2\" AddressAssignment=\"DCP\">",
            self.dap.ident,
            self.min_device_interval,
            esc(&dns_name(cfg))
        );
        let _ = writeln!(
            x,
            "          <ModuleInfo>\n            <Name TextId=\"{dap_name}\"/>\n            <InfoText \
             TextId=\"{dap_info}\"/>\n            <VendorName Value=\"{vendor}\"/>\n            \
             <OrderNumber Value=\"{}\"/>\n            <HardwareRelease Value=\"{}\"/>\n            \
             <SoftwareRelease Value=\"{sw}\"/>\n          </ModuleInfo>",
            esc(if cfg.im0.order_id.is_empty() {
                "-"
            } else {
                &cfg.im0.order_id
            }),
            cfg.im0.hardware_revision
        );
        x.push_str(
            "          <CertificationInfo ConformanceClass=\"B\" ApplicationClass=\"\" NetloadClass=\"I\"/>\n",
        );
        x.push_str("          <IOConfigData MaxInputLength=\"1440\" MaxOutputLength=\"1440\"/>\n");
        if !groups.is_empty() {
            x.push_str("          <UseableModules>\n");
            for (ident, (slots, _)) in groups {
                let s = slot_list(slots);
                let _ = writeln!(
                    x,
                    "            <ModuleItemRef ModuleItemTarget=\"IDM_{ident:08X}\" \
                     AllowedInSlots=\"{s}\" FixedInSlots=\"{s}\"/>"
                );
            }
            x.push_str("          </UseableModules>\n");
        }
        x.push_str("          <VirtualSubmoduleList>\n");
        for s in self.dap.submodules.iter().filter(|s| s.subslot < 0x8000) {
            let id = format!("IDS_DAP_{}", s.subslot);
            let im = if self.writeable_im.is_empty() || s.subslot != 1 {
                String::new()
            } else {
                format!(" Writeable_IM_Records=\"{}\"", self.writeable_im.join(" "))
            };
            let _ = writeln!(
                x,
                "            <VirtualSubmoduleItem ID=\"{id}\" SubmoduleIdentNumber=\"{:#010X}\" \
                 FixedInSubslots=\"{}\" MayIssueProcessAlarm=\"false\"{im}>",
                s.ident, s.subslot
            );
            items::io_data(x, "              ", s, &id, t);
            items::record_data_list(x, "              ", &s.records, &id, t);
            let _ = writeln!(
                x,
                "              <ModuleInfo>\n                <Name TextId=\"{dap_name}\"/>\n                \
                 <InfoText TextId=\"{dap_info}\"/>\n              </ModuleInfo>\n            \
                 </VirtualSubmoduleItem>"
            );
        }
        x.push_str("          </VirtualSubmoduleList>\n");
    }
}

/// The interface and port submodules (SystemDefinedSubmoduleList).
fn system_defined(
    x: &mut String,
    t: &mut Texts,
    interface_ident: u32,
    ports: &[&pn_device_formats::config::SubmoduleConfig],
    send_clocks: &str,
    ratios: &str,
) {
    x.push_str("          <SystemDefinedSubmoduleList>\n");
    let if_name = t.add("IDT_NAME_IS", "X1");
    let _ = writeln!(
        x,
        "            <InterfaceSubmoduleItem ID=\"IDS_I\" SubmoduleIdentNumber=\"{:#010X}\" \
         SubslotNumber=\"32768\" TextId=\"{if_name}\" SupportedRT_Classes=\"RT_CLASS_1\" \
         SupportedProtocols=\"SNMP;LLDP\" NetworkComponentDiagnosisSupported=\"false\" \
         PTP_BoundarySupported=\"true\" DCP_BoundarySupported=\"true\">\n              \
         <ApplicationRelations StartupMode=\"Legacy;Advanced\">\n                \
         <TimingProperties SendClock=\"{send_clocks}\" ReductionRatio=\"{ratios}\"/>\n              \
         </ApplicationRelations>\n            </InterfaceSubmoduleItem>",
        interface_ident
    );
    for p in ports {
        let n = p.subslot - 0x8000;
        let tid = t.add(&format!("IDT_NAME_PS{n}"), &format!("X1 P{n}"));
        let _ = writeln!(
            x,
            "            <PortSubmoduleItem ID=\"IDS_P{n}\" SubmoduleIdentNumber=\"{:#010X}\" \
             SubslotNumber=\"{}\" TextId=\"{tid}\" MaxPortRxDelay=\"350\" \
             MaxPortTxDelay=\"160\">\n              <MAUTypeList>\n                \
             <MAUTypeItem Value=\"16\"/>\n                <MAUTypeItem Value=\"30\"/>\n              \
             </MAUTypeList>\n            </PortSubmoduleItem>",
            p.ident, p.subslot
        );
    }
    x.push_str("          </SystemDefinedSubmoduleList>\n");
}

/// The ModuleList (one ModuleItem per module ident); returns the categories used.
fn module_list(
    x: &mut String,
    t: &mut Texts,
    cfg: &RuntimeConfig,
    groups: &BTreeMap<u32, (Vec<u16>, &ModuleConfig)>,
    sw: &str,
) -> BTreeMap<&'static str, String> {
    let mut categories: BTreeMap<&'static str, String> = BTreeMap::new();
    if !groups.is_empty() {
        x.push_str("      <ModuleList>\n");
        for (ident, (slots, m)) in groups {
            let (ins, outs) = m.submodules.iter().fold((0u32, 0u32), |(i, o), s| {
                (
                    i + u32::from(s.output_length),
                    o + u32::from(s.input_length),
                )
            });
            let mname = t.add(
                &format!("TOK_Name_IDM_{ident:08X}"),
                &format!("Module {ident:#010X}: {ins} bytes in, {outs} bytes out"),
            );
            let minfo = t.add(
                &format!("TOK_Info_IDM_{ident:08X}"),
                &format!(
                    "Fixed in slot(s) {}; inputs = data from the device, outputs = data to the device",
                    slot_list(slots)
                ),
            );
            let (cat, cat_name) = category(m);
            categories.insert(cat, t.add(&format!("TOK_{cat}"), cat_name));
            let _ = writeln!(
                x,
                "        <ModuleItem ID=\"IDM_{ident:08X}\" ModuleIdentNumber=\"{ident:#010X}\">\n          \
                 <ModuleInfo CategoryRef=\"{cat}\">\n            <Name TextId=\"{mname}\"/>\n            <InfoText \
                 TextId=\"{minfo}\"/>\n            <HardwareRelease Value=\"{}\"/>\n            \
                 <SoftwareRelease Value=\"{sw}\"/>\n          </ModuleInfo>\n          \
                 <VirtualSubmoduleList>",
                cfg.im0.hardware_revision
            );
            for s in &m.submodules {
                let id = format!("IDSM_{ident:08X}_{}", s.subslot);
                let _ = writeln!(
                    x,
                    "            <VirtualSubmoduleItem ID=\"{id}\" SubmoduleIdentNumber=\"{:#010X}\" \
                     FixedInSubslots=\"{}\" MayIssueProcessAlarm=\"true\">",
                    s.ident, s.subslot
                );
                items::io_data(x, "              ", s, &id, t);
                items::record_data_list(x, "              ", &s.records, &id, t);
                let _ = writeln!(
                    x,
                    "              <ModuleInfo>\n                <Name TextId=\"{mname}\"/>\n              \
                     </ModuleInfo>\n            </VirtualSubmoduleItem>"
                );
            }
            x.push_str("          </VirtualSubmoduleList>\n        </ModuleItem>\n");
        }
        x.push_str("      </ModuleList>\n");
    }
    categories
}

/// Channel diagnosis list, graphics, categories and the text list; closes the document.
fn epilog(
    x: &mut String,
    t: &mut Texts,
    cfg: &RuntimeConfig,
    opts: &GsdmlOptions,
    categories: &BTreeMap<&'static str, String>,
) {
    items::channel_diag_list(x, t);
    let _ = writeln!(
        x,
        "      <GraphicsList>\n        <GraphicItem ID=\"IDG_Device\" GraphicFile=\"{}\"/>\n      \
         </GraphicsList>",
        esc(&icon_stem(cfg, opts))
    );
    if !categories.is_empty() {
        x.push_str("      <CategoryList>\n");
        for (id, text) in categories {
            let _ = writeln!(x, "        <CategoryItem ID=\"{id}\" TextId=\"{text}\"/>");
        }
        x.push_str("      </CategoryList>\n");
    }
    x.push_str("      <ExternalTextList>\n        <PrimaryLanguage>\n");
    for (id, v) in &t.0 {
        let _ = writeln!(x, "          <Text TextId=\"{id}\" Value=\"{}\"/>", esc(v));
    }
    x.push_str(
        "        </PrimaryLanguage>\n      </ExternalTextList>\n    </ApplicationProcess>\n  \
         </ProfileBody>\n</ISO15745Profile>\n",
    );
}

/// The XML declaration, the generator comment, the profile header and the device identity.
fn prolog(x: &mut String, t: &mut Texts, cfg: &RuntimeConfig, vendor: &str) {
    let _ = writeln!(x, "<?xml version=\"1.0\" encoding=\"utf-8\"?>");
    let _ = writeln!(
        x,
        "<!-- Generated by pn-gsdml from the runtime configuration {} (device {:#06x}/{:#06x}). \
         Regenerate with pn-gsdml after changing the configuration. -->",
        esc(&cfg.source).replace("--", "- -"),
        cfg.vendor_id,
        cfg.device_id
    );
    let _ = writeln!(
        x,
        "<ISO15745Profile xmlns=\"http://www.profibus.com/GSDML/2003/11/DeviceProfile\" \
         xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" \
         xsi:schemaLocation=\"http://www.profibus.com/GSDML/2003/11/DeviceProfile \
         ..\\xsd\\GSDML-DeviceProfile-{SCHEMA_VERSION}.xsd\">"
    );
    x.push_str(
        "  <ProfileHeader>
    <ProfileIdentification>PROFINET Device Profile</ProfileIdentification>
    <ProfileRevision>1.00</ProfileRevision>
    <ProfileName>Device Profile for PROFINET Devices</ProfileName>
    <ProfileSource>PROFIBUS Nutzerorganisation e. V. (PNO)</ProfileSource>
    <ProfileClassID>Device</ProfileClassID>
    <ISO15745Reference>
      <ISO15745Part>4</ISO15745Part>
      <ISO15745Edition>1</ISO15745Edition>
      <ProfileTechnology>GSDML</ProfileTechnology>
    </ISO15745Reference>
  </ProfileHeader>
  <ProfileBody>
",
    );
    let info = t.add(
        "IDT_INFO_Device",
        &format!("{} (PROFINET IO device, RT class 1)", cfg.device_name),
    );
    let _ = writeln!(
        x,
        "    <DeviceIdentity VendorID=\"{:#06X}\" DeviceID=\"{:#06X}\">\n      <InfoText \
         TextId=\"{info}\"/>\n      <VendorName Value=\"{vendor}\"/>\n    </DeviceIdentity>",
        cfg.vendor_id, cfg.device_id
    )
    .map(|_| ());
    let _ = writeln!(
        x,
        "    <DeviceFunction>\n      <Family MainFamily=\"I/O\" ProductFamily=\"{}\"/>\n    \
         </DeviceFunction>",
        esc(&cfg.device_name)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_config_generates_and_parses_back() {
        let cfg = RuntimeConfig::load(None).unwrap();
        let g = generate(&cfg, &GsdmlOptions::default()).unwrap();
        let doc = roxmltree::Document::parse(&g).unwrap();
        let dap = doc
            .descendants()
            .find(|n| n.has_tag_name("DeviceAccessPointItem"))
            .unwrap();
        assert_eq!(dap.attribute("ModuleIdentNumber"), Some("0x00000001"));
        assert_eq!(
            dap.attribute("DNS_CompatibleName"),
            Some(cfg.station_name.as_str())
        );
        // Every TextId used is defined.
        let defined: Vec<&str> = doc
            .descendants()
            .filter(|n| n.has_tag_name("Text"))
            .filter_map(|n| n.attribute("TextId"))
            .collect();
        for n in doc.descendants().filter(|n| !n.has_tag_name("Text")) {
            if let Some(id) = n.attribute("TextId") {
                assert!(defined.contains(&id), "{id}");
            }
        }
        assert_eq!(
            file_name(&cfg, &GsdmlOptions::default(), "20261123"),
            "GSDML-V2.43-pn-device-pn-device-20261123.xml"
        );
    }

    #[test]
    fn declared_items_records_and_channel_diagnosis_are_stated() {
        let p = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/examples/typed-io-and-parameters.xml"
        );
        let cfg = RuntimeConfig::load(Some(std::path::Path::new(p))).unwrap();
        let g = generate(&cfg, &GsdmlOptions::default()).unwrap();
        for want in [
            // OutputItems (device -> controller) are the GSDML's Input.
            "<DataItem DataType=\"Unsigned8\" TextId=\"TOK_IDSM_00000040_1_In_1\" \
             UseAsBits=\"true\">",
            "<BitDataItem BitOffset=\"7\" TextId=\"TOK_IDSM_00000040_1_In_1_Bit7\"/>",
            "<Text TextId=\"TOK_IDSM_00000040_1_In_1_Bit7\" Value=\"Fault\"/>",
            "<DataItem DataType=\"OctetString\" Length=\"3\" TextId=\"TOK_IDSM_00000040_1_In_2\"/>",
            "<DataItem DataType=\"Integer16\" TextId=\"TOK_IDSM_00000040_1_Out_3\"/>",
            "<ParameterRecordDataItem Index=\"256\" Length=\"6\">\n                  <Name \
             TextId=\"TOK_IDSM_00000040_1_Rec256\"/>",
            "<Ref DataType=\"Unsigned8\" ByteOffset=\"2\" DefaultValue=\"1\" AllowedValues=\"1 2 3\" \
             Changeable=\"true\" Visible=\"true\" TextId=\"TOK_IDSM_00000040_1_Rec256_2\"/>",
            "<Ref DataType=\"BitArea\" ByteOffset=\"3\" BitOffset=\"4\" BitLength=\"3\" \
             DefaultValue=\"2\" AllowedValues=\"0..5\"",
            "<Ref DataType=\"Integer16\" ByteOffset=\"4\" DefaultValue=\"-20\" \
             AllowedValues=\"-100..100\"",
            "<ChannelDiagItem ErrorType=\"6\">\n          <Name TextId=\"IDT_DIAG_6\"/>",
            "<Text TextId=\"IDT_DIAG_6\" Value=\"Line break\"/>",
            "<Text TextId=\"TOK_IDSM_00000040_1_Rec256_4\" Value=\"Filter level\"/>",
        ] {
            assert!(g.contains(want), "missing {want}\n{g}");
        }
        // Undeclared submodules keep one OctetString per direction.
        let plain = generate(
            &RuntimeConfig::load(None).unwrap(),
            &GsdmlOptions::default(),
        )
        .unwrap();
        assert!(plain.contains("DataType=\"OctetString\""));
        assert!(!plain.contains("RecordDataList"));
    }

    #[test]
    fn conflicting_module_types_are_refused() {
        let mut cfg = RuntimeConfig::load(None).unwrap();
        let mut m = cfg.modules.iter().find(|m| m.slot == 1).unwrap().clone();
        m.slot = 2;
        m.submodules[0].input_length += 1;
        cfg.modules.push(m);
        assert!(generate(&cfg, &GsdmlOptions::default())
            .unwrap_err()
            .contains("different submodules"));
        assert_eq!(esc("a<&\"b"), "a&lt;&amp;&quot;b");
    }
}
