//! The parts of the GSDML the configuration's declarations give: a submodule's IO data items,
//! its parameter records, and the device's channel diagnosis texts. Element and attribute
//! names and their order follow p-net's sample GSDML (`IOData` with `DataItem`/`UseAsBits`/
//! `BitDataItem`, then `RecordDataList` with `ParameterRecordDataItem`/`Name`/`Ref`, then
//! `ModuleInfo`); sources in docs/protocol.md, "GSDML".

use std::fmt::Write as _;

use pn_device_formats::items::IoItem;
use pn_protocol::machine::cmdev::params::{FieldKind, ParamRecord};
use pn_protocol::wire::pnio::diagnosis::channel_error_type;

use super::Texts;
use crate::dataplane::SubmoduleConfig;

/// One direction of `<IOData>`: the declared items, or one OctetString over all bytes when
/// the configuration declares none.
fn direction(
    out: &mut String,
    ind: &str,
    el: &str,
    len: u16,
    items: &[IoItem],
    tok: &str,
    t: &mut Texts,
) {
    let _ = writeln!(out, "{ind}  <{el} Consistency=\"All items consistency\">");
    if items.is_empty() {
        let what = if el == "Input" { "from" } else { "to" };
        let tid = t.add(tok, &format!("{len} bytes {what} the device"));
        let _ = writeln!(
            out,
            "{ind}    <DataItem DataType=\"OctetString\" Length=\"{len}\" TextId=\"{tid}\"/>"
        );
    }
    for (k, item) in items.iter().enumerate() {
        let tid = t.add(&format!("{tok}_{}", k + 1), &item.name);
        let length = match item.data_type {
            pn_device_formats::items::IoType::OctetString(n) => format!(" Length=\"{n}\""),
            _ => String::new(),
        };
        let dt = item.data_type.gsdml_name();
        if item.bits.is_empty() {
            let _ = writeln!(
                out,
                "{ind}    <DataItem DataType=\"{dt}\"{length} TextId=\"{tid}\"/>"
            );
            continue;
        }
        let _ = writeln!(
            out,
            "{ind}    <DataItem DataType=\"{dt}\" TextId=\"{tid}\" UseAsBits=\"true\">"
        );
        for (bit, name) in &item.bits {
            let btid = t.add(&format!("{tok}_{}_Bit{bit}", k + 1), name);
            let _ = writeln!(
                out,
                "{ind}      <BitDataItem BitOffset=\"{bit}\" TextId=\"{btid}\"/>"
            );
        }
        let _ = writeln!(out, "{ind}    </DataItem>");
    }
    let _ = writeln!(out, "{ind}  </{el}>");
}

/// `<IOData>` of a submodule. GSDML counts from the controller: `<Input>` is what the device
/// sends (the configuration's OutputLength), `<Output>` what it receives (InputLength).
pub(super) fn io_data(out: &mut String, ind: &str, s: &SubmoduleConfig, id: &str, t: &mut Texts) {
    if s.output_length == 0 && s.input_length == 0 {
        let _ = writeln!(out, "{ind}<IOData/>");
        return;
    }
    let _ = writeln!(out, "{ind}<IOData>");
    if s.output_length > 0 {
        let tok = format!("TOK_{id}_In");
        direction(out, ind, "Input", s.output_length, &s.output_items, &tok, t);
    }
    if s.input_length > 0 {
        let tok = format!("TOK_{id}_Out");
        direction(out, ind, "Output", s.input_length, &s.input_items, &tok, t);
    }
    let _ = writeln!(out, "{ind}</IOData>");
}

/// One `<Ref>` of a parameter record: GSDML `Bit` for one bit, `BitArea` for several.
fn param_ref(
    out: &mut String,
    ind: &str,
    f: &pn_protocol::machine::cmdev::params::ParamField,
    tid: &str,
) {
    let (dt, bits) = match f.kind {
        FieldKind::Value(ty) => (ty.name(), String::new()),
        FieldKind::Bits { offset, length: 1 } => ("Bit", format!(" BitOffset=\"{offset}\"")),
        FieldKind::Bits { offset, length } => (
            "BitArea",
            format!(" BitOffset=\"{offset}\" BitLength=\"{length}\""),
        ),
    };
    let allowed = f.allowed.to_gsdml();
    let allowed = if allowed.is_empty() {
        String::new()
    } else {
        format!(" AllowedValues=\"{allowed}\"")
    };
    let _ = writeln!(
        out,
        "{ind}  <Ref DataType=\"{dt}\" ByteOffset=\"{}\"{bits} DefaultValue=\"{}\"{allowed} \
         Changeable=\"true\" Visible=\"true\" TextId=\"{tid}\"/>",
        f.byte_offset, f.default
    );
}

/// `<RecordDataList>` of a submodule's declared parameter records; nothing without any.
pub(super) fn record_data_list(
    out: &mut String,
    ind: &str,
    records: &[ParamRecord],
    id: &str,
    t: &mut Texts,
) {
    if records.is_empty() {
        return;
    }
    let _ = writeln!(out, "{ind}<RecordDataList>");
    for r in records {
        let tok = format!("TOK_{id}_Rec{}", r.index);
        let name = t.add(&tok, &r.name);
        let _ = writeln!(
            out,
            "{ind}  <ParameterRecordDataItem Index=\"{}\" Length=\"{}\">\n{ind}    <Name \
             TextId=\"{name}\"/>",
            r.index, r.length
        );
        for (k, f) in r.fields.iter().enumerate() {
            let tid = t.add(&format!("{tok}_{}", k + 1), &f.name);
            param_ref(out, &format!("{ind}  "), f, &tid);
        }
        let _ = writeln!(out, "{ind}  </ParameterRecordDataItem>");
    }
    let _ = writeln!(out, "{ind}</RecordDataList>");
}

/// The ChannelErrorTypes the device's diagnosis reports by name: the standard ones of the
/// protocol crate's table (0x0001..0x00FF). Types from 0x8000 on belong to the standard's own
/// (PDev) diagnosis, which this device does not raise.
pub(super) fn channel_diag_types() -> impl Iterator<Item = (u16, &'static str)> {
    channel_error_type::NAMES
        .into_iter()
        .filter(|(v, _)| *v < 0x8000)
}

/// `<ChannelDiagList>`: one `ChannelDiagItem` per error type, its name in the text list.
pub(super) fn channel_diag_list(out: &mut String, t: &mut Texts) {
    out.push_str("      <ChannelDiagList>\n");
    for (v, name) in channel_diag_types() {
        let mut text = name.to_string();
        if let Some(c) = text.get_mut(0..1) {
            c.make_ascii_uppercase();
        }
        let tid = t.add(&format!("IDT_DIAG_{v}"), &text);
        let _ = writeln!(
            out,
            "        <ChannelDiagItem ErrorType=\"{v}\">\n          <Name TextId=\"{tid}\"/>\n        \
             </ChannelDiagItem>"
        );
    }
    out.push_str("      </ChannelDiagList>\n");
}
