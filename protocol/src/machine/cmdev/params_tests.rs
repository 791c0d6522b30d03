use super::*;

fn field(name: &str, off: u16, kind: FieldKind, default: i64, allowed: &str) -> ParamField {
    ParamField {
        name: name.into(),
        byte_offset: off,
        kind,
        default,
        allowed: if allowed.is_empty() {
            Allowed::default()
        } else {
            Allowed::parse(allowed).unwrap()
        },
    }
}

/// Gain: Unsigned16 1..100 (default 2), Mode: Unsigned8 in {1, 2, 3}, Enable: bit 0 of
/// byte 3, Offset: Integer8 -10..10 (default -1).
fn settings() -> ParamRecord {
    ParamRecord {
        index: 0x100,
        length: 5,
        name: "Settings".into(),
        fields: vec![
            field(
                "Gain",
                0,
                FieldKind::Value(ParamType::Unsigned16),
                2,
                "1..100",
            ),
            field(
                "Mode",
                2,
                FieldKind::Value(ParamType::Unsigned8),
                1,
                "1 2 3",
            ),
            field(
                "Enable",
                3,
                FieldKind::Bits {
                    offset: 0,
                    length: 1,
                },
                1,
                "",
            ),
            field(
                "Offset",
                4,
                FieldKind::Value(ParamType::Integer8),
                -1,
                "-10..10",
            ),
        ],
    }
}

const LEN_ERROR: PnioStatus = PnioStatus::new(0xDF, 0x80, 0xB1, 0x00);
const VALUE_ERROR: PnioStatus = PnioStatus::new(0xDF, 0x80, 0xB8, 0x00);

#[test]
fn defaults_encode_big_endian_and_pass_the_check() {
    let r = settings();
    r.validate().unwrap();
    assert_eq!(r.defaults(), vec![0x00, 0x02, 0x01, 0x01, 0xFF]);
    assert_eq!(r.check(&r.defaults()), Ok(()));
}

#[test]
fn writes_inside_the_allowed_values_are_accepted() {
    let r = settings();
    for ok in [
        [0x00, 0x64, 0x03, 0x00, 0x0A], // Gain 100, Mode 3, Enable 0, Offset 10
        [0x00, 0x01, 0x02, 0xFE, 0xF6], // unchecked bits of byte 3 may be set; Offset -10
    ] {
        assert_eq!(r.check(&ok), Ok(()), "{ok:02x?}");
    }
}

#[test]
fn a_wrong_length_is_a_write_length_error() {
    let r = settings();
    assert_eq!(r.check(&[0, 2, 1, 1]), Err(LEN_ERROR));
    assert_eq!(r.check(&[0, 2, 1, 1, 0, 0]), Err(LEN_ERROR));
    assert_eq!(r.check(&[]), Err(LEN_ERROR));
}

#[test]
fn a_value_outside_the_allowed_values_is_an_invalid_parameter() {
    let r = settings();
    for bad in [
        [0x00, 0x00, 0x01, 0x01, 0x00], // Gain 0 below 1..100
        [0x01, 0x00, 0x01, 0x01, 0x00], // Gain 256 above
        [0x00, 0x02, 0x04, 0x01, 0x00], // Mode 4 not in the list
        [0x00, 0x02, 0x01, 0x01, 0x0B], // Offset 11
        [0x00, 0x02, 0x01, 0x01, 0xF5], // Offset -11
    ] {
        assert_eq!(r.check(&bad), Err(VALUE_ERROR), "{bad:02x?}");
    }
    assert_eq!(
        VALUE_ERROR.in_words(),
        "DF 80 B8 00 (Write: access: invalid parameter)"
    );
}

#[test]
fn the_table_checks_only_declared_records() {
    let mut t = ParamRecords::default();
    t.insert(1, 1, settings());
    let at = |slot, subslot, index| RecordAddress::new(0, slot, subslot, index);
    assert_eq!(t.check(&at(1, 1, 0x100), &[1]), Err(LEN_ERROR));
    // Another submodule, another index: the application decides.
    assert_eq!(t.check(&at(1, 2, 0x100), &[1]), Ok(()));
    assert_eq!(t.check(&at(1, 1, 0x101), &[1]), Ok(()));
}

#[test]
fn bad_declarations_are_named() {
    let with = |f: ParamField| ParamRecord {
        fields: vec![f],
        ..settings()
    };
    let u8f = FieldKind::Value(ParamType::Unsigned8);
    let cases = [
        (
            with(field("A", 5, u8f, 0, "")),
            "Parameter 'A': bytes 5..6 lie outside the record's Length 5",
        ),
        (
            with(field("B", 0, u8f, 300, "")),
            "Parameter 'B': Default 300 is not one of its allowed values",
        ),
        (
            with(field("C", 0, u8f, 0, "0..300")),
            "Parameter 'C': allowed values 0..300 do not fit its type (0..255)",
        ),
        (
            with(field(
                "D",
                0,
                FieldKind::Bits {
                    offset: 6,
                    length: 3,
                },
                0,
                "",
            )),
            "Parameter 'D': BitOffset 6 and BitLength 3 must stay inside one byte",
        ),
        (
            with(field("E", 0, u8f, 4, "1 2 3")),
            "Parameter 'E': Default 4 is not one of its allowed values",
        ),
    ];
    for (rec, want) in cases {
        let e = rec.validate().unwrap_err();
        assert!(e.starts_with(want), "{e}");
    }
    let mut overlap = settings();
    overlap.fields.push(field("F", 1, u8f, 0, "")); // inside Gain
    assert_eq!(
        overlap.validate().unwrap_err(),
        "Parameter 'F' overlaps another parameter"
    );
    let mut bits = settings();
    bits.fields.push(field(
        "G",
        3,
        FieldKind::Bits {
            offset: 1,
            length: 2,
        },
        0,
        "",
    ));
    assert_eq!(
        bits.validate(),
        Ok(()),
        "bits beside Enable in the same byte"
    );
    let big = ParamRecord {
        index: 0x8000,
        ..settings()
    };
    assert!(big
        .validate()
        .unwrap_err()
        .contains("not a user record index"));
}

#[test]
fn allowed_values_parse_and_print_in_the_gsdml_form() {
    let a = Allowed::parse("0..3 7 0x10..0x11").unwrap();
    assert_eq!(a.to_gsdml(), "0..3 7 16..17");
    assert!(a.contains(2) && a.contains(7) && a.contains(17) && !a.contains(5));
    assert_eq!(Allowed::parse("-5..-1").unwrap().0, vec![(-5, -1)]);
    assert!(Allowed::parse("3..1").unwrap_err().contains("empty"));
    assert!(Allowed::parse("x").unwrap_err().contains("not a number"));
    assert!(Allowed::parse(" ").is_err());
    assert_eq!(ParamType::Integer16.limits(), (-32768, 32767));
    assert_eq!(ParamType::Unsigned32.limits(), (0, 0xFFFF_FFFF));
    assert_eq!(
        ParamType::from_name("Integer32"),
        Some(ParamType::Integer32)
    );
}
