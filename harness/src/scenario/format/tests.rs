use super::*;

fn parse(text: &str) -> Result<Scenario, FormatError> {
    Scenario::parse(Path::new("scenarios/x.toml"), text)
}

#[test]
fn a_full_scenario_parses() {
    let s = parse(
        r#"
title = "t"
covers = ["T1"]
[device]
nic = "missing"
licence = "expires-in-3s"
api_key = "k"
[controller]
cycle_ms = 4
data_hold_factor = 3
[[step]]
call = "POST /api/io"
body = { offset = 0, data = "01" }
expect = 200
assert = { ok = false, reasonCode = { contains = "LinkDown" } }
snapshot = "write"
[[step]]
wait = "GET /api/status"
until = { state = "DataExchange" }
within_ms = 5000
[[step]]
controller = "set-outputs"
hex = "0102"
[[step]]
link = "down"
"#,
    )
    .unwrap();
    assert_eq!(s.name, "x");
    assert_eq!(s.device.nic, NicChoice::Missing);
    assert_eq!(s.device.licence, LicenceChoice::ExpiresIn(3));
    assert_eq!(s.steps.len(), 4);
    let Action::Call(c) = &s.steps[0].action else {
        panic!()
    };
    assert_eq!(c.method, "POST");
    assert_eq!(c.assert["reasonCode"], Matcher::Contains("LinkDown".into()));
    assert_eq!(s.steps[3].action, Action::Link { up: false });
}

#[test]
fn errors_name_file_step_and_cause() {
    let e = parse("title = \"t\"\n[[step]]\ncall = \"GET /api/status\"\n[[step]]\ncall = \"GET /x\"\nexpct = 200\n")
        .unwrap_err();
    assert_eq!(e.step, Some(2));
    assert!(
        e.to_string()
            .starts_with("scenarios/x.toml: step 2: unknown key `expct`"),
        "{e}"
    );

    let e =
        parse("title = \"t\"\n[[step]]\nwait = \"GET /api/status\"\nuntil = { state = \"X\" }\n")
            .unwrap_err();
    assert!(e.cause.contains("within_ms"), "{e}");

    let e = parse("title = \"t\"\n[[step]]\nlink = \"sideways\"\n").unwrap_err();
    assert_eq!(e.step, Some(1));

    let e = parse("[[step]]\nlink = \"up\"\n").unwrap_err();
    assert_eq!((e.step, e.cause.as_str()), (None, "missing `title`"));

    let e = parse("title = \"t\"\n[[step]]\ncontroller = \"connect\"\n").unwrap_err();
    assert!(e.cause.contains("[controller]"), "{e}");

    let e = parse("title = \"t\"\n[[step]]\ncall = \"GET /a\"\nlink = \"up\"\n").unwrap_err();
    assert!(e.cause.contains("more than one action"), "{e}");

    let e = parse("title = \"t\"\n[[step]]\ncall = \"GET /a\"\nassert = { x = { near = 1 } }\n")
        .unwrap_err();
    assert!(e.cause.contains("unknown operator `near`"), "{e}");

    let e = parse("title = = 1").unwrap_err();
    assert!(e.cause.starts_with("not valid TOML"), "{e}");

    let e = parse("title = \"t\"\n[[step]]\nnetem = true\nduplicate_pct = 50\n").unwrap_err();
    assert!(e.cause.contains("0 or 100"), "{e}");
    let e = parse("title = \"t\"\n[[step]]\nnetem = true\ndelay_ms = 60001\n").unwrap_err();
    assert!(e.to_string().contains("`delay_ms` must be 0..60000"), "{e}");
    let ok = parse("title = \"t\"\n[[step]]\nnetem = true\nduplicate_pct = 100\n").unwrap();
    assert!(matches!(
        ok.steps[0].action,
        Action::Netem { duplicate_pct, .. } if duplicate_pct == 100.0
    ));
}
