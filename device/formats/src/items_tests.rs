use crate::config::RuntimeConfig;

use super::*;

const DAP: &str = r#"<Module Slot="0" ModuleIdentNumber="1"><Submodule Subslot="1" SubmoduleIdentNumber="1"/><Submodule Subslot="0x8000" SubmoduleIdentNumber="2"/><Submodule Subslot="0x8001" SubmoduleIdentNumber="3"/></Module>"#;

/// A configuration whose slot 1 submodule has `InputLength="4" OutputLength="3"` and `body`.
fn parse(body: &str) -> Result<RuntimeConfig, String> {
    RuntimeConfig::parse(
        &format!(
            "<PnDeviceConfiguration><VendorID>1</VendorID><DeviceID>1</DeviceID><SlotLayout>{DAP}\
             <Module Slot=\"1\" ModuleIdentNumber=\"0x30\"><Submodule Subslot=\"1\" \
             SubmoduleIdentNumber=\"7\" InputLength=\"4\" OutputLength=\"3\">{body}</Submodule>\
             </Module></SlotLayout></PnDeviceConfiguration>"
        ),
        "t.xml",
    )
}

fn sub(c: &RuntimeConfig) -> &crate::config::SubmoduleConfig {
    &c.modules[1].submodules[0]
}

const ITEMS: &str = r#"
  <InputItems>
    <Item DataType="Unsigned16" Name="Setpoint"/>
    <Item DataType="Unsigned8" Name="Commands"><Bit Offset="1" Name="Stop"/><Bit Offset="0" Name="Start"/></Item>
    <Item DataType="Integer8"/>
  </InputItems>
  <OutputItems><Item DataType="OctetString" Length="3" Name="Status"/></OutputItems>"#;

#[test]
fn typed_items_are_read_with_their_bits() {
    let c = parse(ITEMS).unwrap();
    let s = sub(&c);
    let types: Vec<IoType> = s.input_items.iter().map(|i| i.data_type).collect();
    assert_eq!(
        types,
        vec![
            IoType::Int(ParamType::Unsigned16),
            IoType::Int(ParamType::Unsigned8),
            IoType::Int(ParamType::Integer8)
        ]
    );
    assert_eq!(
        s.input_items[1].bits,
        vec![(0, "Start".to_string()), (1, "Stop".to_string())]
    );
    assert_eq!(s.input_items[2].name, "Integer8 at byte 3");
    assert_eq!(s.output_items[0].data_type, IoType::OctetString(3));
    // Without declarations: nothing, as before.
    let c = parse("").unwrap();
    assert!(sub(&c).input_items.is_empty() && sub(&c).records.is_empty());
}

#[test]
fn items_must_add_up_to_the_submodule_length() {
    let e = parse(
        r#"<InputItems><Item DataType="Unsigned32"/><Item DataType="Float32"/></InputItems>"#,
    )
    .unwrap_err();
    assert_eq!(
        e,
        "configuration t.xml: Module Slot=1 Submodule Subslot=0x1 InputItems: the items' sizes \
         add up to 8 bytes, but InputLength is 4"
    );
    let e = parse(r#"<OutputItems><Item DataType="Unsigned16"/></OutputItems>"#).unwrap_err();
    assert!(
        e.ends_with("OutputItems: the items' sizes add up to 2 bytes, but OutputLength is 3"),
        "{e}"
    );
}

#[test]
fn bad_items_are_named() {
    let cases = [
        (
            r#"<InputItems><Item DataType="Real"/></InputItems>"#,
            "InputItems Item 1: DataType 'Real' is not one of Unsigned8",
        ),
        (
            r#"<InputItems><Item DataType="OctetString"/></InputItems>"#,
            "InputItems Item 1: missing Length",
        ),
        (
            r#"<InputItems><Item DataType="Float32"><Bit Offset="0"/></Item></InputItems>"#,
            "InputItems Item 1 Bit Offset=0: bits can be named in Unsigned8/16/32 items only",
        ),
        (
            r#"<InputItems><Item DataType="Unsigned8"><Bit Offset="8"/></Item></InputItems>"#,
            "Bit Offset=8: outside the item's 8 bits",
        ),
        (
            r#"<InputItems><Field DataType="Unsigned8"/></InputItems>"#,
            "InputItems: unexpected element <Field>",
        ),
    ];
    for (body, want) in cases {
        let e = parse(body).unwrap_err();
        assert!(e.contains(want), "{body}: {e}");
    }
}

const RECORD: &str = r#"
  <ParameterRecord Index="0x100" Length="4" Name="Settings">
    <Parameter Name="Gain" ByteOffset="0" DataType="Unsigned16" Default="2" Allowed="1..100"/>
    <Parameter Name="Mode" ByteOffset="2" DataType="Unsigned8" Default="1" Allowed="1 2 3"/>
    <Parameter Name="Enable" ByteOffset="3" BitOffset="0" Default="1"/>
  </ParameterRecord>"#;

#[test]
fn parameter_records_are_read_and_give_their_defaults() {
    let c = parse(RECORD).unwrap();
    let r = &sub(&c).records[0];
    assert_eq!((r.index, r.length, r.name.as_str()), (0x100, 4, "Settings"));
    assert_eq!(r.fields.len(), 3);
    assert_eq!(
        r.fields[2].kind,
        FieldKind::Bits {
            offset: 0,
            length: 1
        }
    );
    assert_eq!(r.defaults(), vec![0, 2, 1, 1]);
}

#[test]
fn bad_parameter_records_are_named() {
    let rec =
        |p: &str| format!(r#"<ParameterRecord Index="0x100" Length="2">{p}</ParameterRecord>"#);
    let cases = [
        (
            rec(r#"<Parameter Name="A" ByteOffset="1" DataType="Unsigned16"/>"#),
            "ParameterRecord Index=0x100: Parameter 'A': bytes 1..3 lie outside the record's Length 2",
        ),
        (
            rec(r#"<Parameter Name="B" ByteOffset="0" DataType="Unsigned8" Allowed="1..5"/>"#),
            "ParameterRecord Index=0x100: Parameter 'B': Default 0 is not one of its allowed values",
        ),
        (
            rec(r#"<Parameter Name="C" ByteOffset="0" DataType="Float32"/>"#),
            "Parameter 'C': DataType 'Float32' is not one of Unsigned8",
        ),
        (
            rec(r#"<Parameter Name="D" ByteOffset="0" DataType="Unsigned8" Allowed="1..x"/>"#),
            "Parameter 'D': Allowed '1..x': 'x' is not a number",
        ),
        (
            rec(r#"<Parameter Name="E" ByteOffset="0" BitOffset="0" DataType="Unsigned8"/>"#),
            "Parameter 'E': a field with BitOffset has DataType Bit or BitArea",
        ),
        (
            format!("{}{}", rec(""), rec("")),
            "ParameterRecord Index=0x100: duplicate index",
        ),
        (
            r#"<ParameterRecord Index="0x100"/>"#.to_string(),
            "ParameterRecord Index=0x100: missing Length",
        ),
    ];
    for (body, want) in cases {
        let e = parse(&body).unwrap_err();
        assert!(e.contains(want), "{body}: {e}");
    }
}

#[test]
fn port_submodules_declare_nothing() {
    let x = RuntimeConfig::parse(
        &format!(
            "<PnDeviceConfiguration><VendorID>1</VendorID><DeviceID>1</DeviceID><SlotLayout>{}\
             </SlotLayout></PnDeviceConfiguration>",
            DAP.replace(
                r#"SubmoduleIdentNumber="3"/>"#,
                r#"SubmoduleIdentNumber="3"><ParameterRecord Index="1" Length="1"/></Submodule>"#
            )
        ),
        "t",
    )
    .unwrap_err();
    assert!(
        x.contains("Subslot=0x8001: interface and port submodules declare no items"),
        "{x}"
    );
}

#[test]
fn the_declared_records_are_keyed_by_slot_subslot_and_index() {
    let c = parse(RECORD).unwrap();
    let t = declared_records(&c.modules);
    assert_eq!(t.get(1, 1, 0x100).map(|r| r.length), Some(4));
    assert!(t.get(1, 2, 0x100).is_none() && t.get(0, 1, 0x100).is_none());
    let a = pn_protocol::wire::pnio::record::RecordAddress::new(0, 1, 1, 0x100);
    assert_eq!(
        t.check(&a, &[0, 0, 1, 1]).unwrap_err().in_words(),
        "DF 80 B8 00 (Write: access: invalid parameter)"
    );
    assert!(declared_records(&parse("").unwrap().modules).is_empty());
}
