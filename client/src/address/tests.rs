use super::*;

fn a(s: &str) -> Address {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}
fn err(s: &str) -> Error {
    s.parse::<Address>().expect_err(s)
}

#[test]
fn every_form_parses_and_displays_canonically() {
    let cases: &[(&str, Area, u32, Access)] = &[
        ("I0.0", Area::I, 0, Access::Bit(0)),
        ("I3.7", Area::I, 3, Access::Bit(7)),
        ("IB0", Area::I, 0, Access::Byte),
        ("IW2", Area::I, 2, Access::Word),
        ("IW3", Area::I, 3, Access::Word),
        ("ID4", Area::I, 4, Access::DWord),
        ("Q0.0", Area::Q, 0, Access::Bit(0)),
        ("QB0", Area::Q, 0, Access::Byte),
        ("QW2", Area::Q, 2, Access::Word),
        ("QD4", Area::Q, 4, Access::DWord),
        ("M0.0", Area::M, 0, Access::Bit(0)),
        ("MB0", Area::M, 0, Access::Byte),
        ("MW100", Area::M, 100, Access::Word),
        ("MD0", Area::M, 0, Access::DWord),
        ("DB1.DBX0.0", Area::Db(1), 0, Access::Bit(0)),
        ("DB1.DBX0.3", Area::Db(1), 0, Access::Bit(3)),
        ("DB1.DBB2", Area::Db(1), 2, Access::Byte),
        ("DB1.DBW0", Area::Db(1), 0, Access::Word),
        ("DB1.DBD4", Area::Db(1), 4, Access::DWord),
        ("DB2.DBW0", Area::Db(2), 0, Access::Word),
        ("I1439.7", Area::I, 1439, Access::Bit(7)),
    ];
    for &(s, area, offset, access) in cases {
        let got = a(s);
        assert_eq!(
            got,
            Address {
                area,
                offset,
                access
            },
            "{s}"
        );
        assert_eq!(got.to_string(), s);
        assert_eq!(got.len(), access.len());
    }
}

#[test]
fn lower_case_and_spaces_accepted() {
    assert_eq!(a(" db1.dbx0.3 "), a("DB1.DBX0.3"));
    assert_eq!(a("iw2"), a("IW2"));
    assert_eq!(a("m1.1").to_string(), "M1.1");
}

#[test]
fn bad_forms_are_invalid_argument() {
    for s in [
        "",
        "   ",
        "I0.8",
        "I0.9",
        "DB1.DBX0.8",
        "X0.0",
        "Z",
        "I",
        "IB",
        "IW",
        "I0",
        "I0.",
        "I.0",
        "IB0.1",
        "IW2.0",
        "DB1.DBW0.1",
        "I-1.0",
        "IB-1",
        "IB+1",
        "IBx",
        "IB1x",
        "I0.0.0",
        "DB",
        "DB1",
        "DB1.",
        "DB1.DB",
        "DB1.DBQ0",
        "DBX.DBB0",
        "DB.DBB0",
        "DB1.DBX0",
        "DB1DBB0",
        "DB1.XBB0",
        "IB99999999999",
        "I0.99999999999",
        "DB0.DBB0",
        "IÜ0",
        "QQ0",
        "IBW0",
        "I0,0",
        "garbage",
        "DB1.DBB",
        "IL0",
    ] {
        let e = err(s);
        assert_eq!(e.kind, CallResult::InvalidArgument, "{s:?}: {e}");
        assert!(!e.message.is_empty());
    }
    assert!(err("I0.8").message.contains("> 7"));
    assert!(err("X0.0").message.contains("unknown area"));
}

#[test]
fn sides_follow_the_io_model() {
    assert_eq!(a("I0.0").side().unwrap(), Side::Writable);
    assert_eq!(a("MW100").side().unwrap(), Side::Writable);
    assert_eq!(a("DB1.DBW0").side().unwrap(), Side::Writable);
    assert_eq!(a("QB0").side().unwrap(), Side::ReadOnly);
    assert_eq!(a("DB2.DBW0").side().unwrap_err().kind, CallResult::NotFound);
    assert_eq!(
        a("DB65535.DBX0.0").side().unwrap_err().kind,
        CallResult::NotFound
    );
    assert_eq!(
        a("QW2").check_writable().unwrap_err().kind,
        CallResult::NotSupported
    );
    assert_eq!(
        a("Q0.0").check_writable().unwrap_err().kind,
        CallResult::NotSupported
    );
    assert_eq!(
        a("DB3.DBB0").check_writable().unwrap_err().kind,
        CallResult::NotFound
    );
    assert!(a("ID0").check_writable().is_ok());
}

#[test]
fn type_compatibility() {
    assert!(a("I0.1").check_type(ValueType::Bool).is_ok());
    assert!(a("IB0").check_type(ValueType::U8).is_ok());
    assert!(a("IB0").check_type(ValueType::I8).is_ok());
    assert!(a("IW1").check_type(ValueType::I16).is_ok());
    assert!(a("ID0").check_type(ValueType::F32).is_ok());
    assert!(a("ID0").check_type(ValueType::F64).is_ok());
    assert!(a("IB0").check_type(ValueType::U64).is_ok());
    for (s, t) in [
        ("IB0", ValueType::Bool),
        ("I0.0", ValueType::U8),
        ("IB0", ValueType::U16),
        ("IW0", ValueType::U32),
        ("ID0", ValueType::U16),
        ("I0.0", ValueType::F64),
    ] {
        assert_eq!(
            a(s).check_type(t).unwrap_err().kind,
            CallResult::InvalidArgument,
            "{s} {t}"
        );
    }
    assert_eq!(a("DB1.DBX0.0").default_type(), ValueType::Bool);
    assert_eq!(a("QB0").default_type(), ValueType::U8);
    assert_eq!(a("MW0").default_type(), ValueType::U16);
    assert_eq!(a("ID0").default_type(), ValueType::U32);
}

#[test]
fn big_endian_codec_round_trip() {
    let vals = [
        Value::U8(0xAB),
        Value::I8(-2),
        Value::U16(0x1234),
        Value::I16(-300),
        Value::U32(0xDEADBEEF),
        Value::I32(-70000),
        Value::F32(1.5),
        Value::U64(0x0102030405060708),
        Value::I64(-5),
        Value::F64(-2.25),
    ];
    for v in vals {
        let b = v.to_be_bytes();
        assert_eq!(b.len(), v.value_type().len());
        assert_eq!(v.value_type().decode(&b, 0).unwrap(), v);
    }
    assert_eq!(Value::U16(0x1234).to_be_bytes(), vec![0x12, 0x34]);
    assert_eq!(Value::F32(1.0).to_be_bytes(), vec![0x3f, 0x80, 0, 0]);
    assert_eq!(
        Value::U64(0x0102030405060708).to_be_bytes(),
        vec![1, 2, 3, 4, 5, 6, 7, 8]
    );
    assert_eq!(
        ValueType::Bool.decode(&[0b0000_1000], 3).unwrap(),
        Value::Bool(true)
    );
    assert_eq!(
        ValueType::Bool.decode(&[0b0000_1000], 2).unwrap(),
        Value::Bool(false)
    );
    assert_eq!(
        ValueType::U16.decode(&[1], 0).unwrap_err().kind,
        CallResult::LengthMismatch
    );
}

#[test]
fn value_text_parsing() {
    assert_eq!(
        ValueType::Bool.parse_value("on").unwrap(),
        Value::Bool(true)
    );
    assert_eq!(
        ValueType::Bool.parse_value("0").unwrap(),
        Value::Bool(false)
    );
    assert_eq!(ValueType::U8.parse_value("0xff").unwrap(), Value::U8(255));
    assert_eq!(ValueType::I16.parse_value("-2").unwrap(), Value::I16(-2));
    assert_eq!(ValueType::F64.parse_value("2.5").unwrap(), Value::F64(2.5));
    assert_eq!(
        ValueType::U64.parse_value("18446744073709551615").unwrap(),
        Value::U64(u64::MAX)
    );
    for (t, s) in [
        (ValueType::U8, "256"),
        (ValueType::U8, "-1"),
        (ValueType::I8, "128"),
        (ValueType::Bool, "yes"),
        (ValueType::U16, "1.5"),
        (ValueType::F32, "x"),
        (ValueType::U32, ""),
        (ValueType::U32, "0x"),
    ] {
        assert_eq!(
            t.parse_value(s).unwrap_err().kind,
            CallResult::InvalidArgument,
            "{t} {s}"
        );
    }
    assert_eq!("F32".parse::<ValueType>().unwrap(), ValueType::F32);
    assert_eq!(
        "real".parse::<ValueType>().unwrap_err().kind,
        CallResult::InvalidArgument
    );
}
