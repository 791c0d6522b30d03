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

/// A one-step scenario with the given step body.
fn one_step(step: &str) -> Result<Scenario, FormatError> {
    parse(&format!("title = \"t\"\n[controller]\n[[step]]\n{step}\n"))
}

#[test]
fn unknown_key_at_top_level_names_the_key() {
    let e = parse("title = \"t\"\ntitel = \"u\"\n[[step]]\nlink = \"up\"\n").unwrap_err();
    assert_eq!(e.step, None);
    assert!(
        e.cause
            .starts_with("unknown key `titel` in the scenario, expected one of `title`"),
        "{e}"
    );
}

#[test]
fn unknown_key_in_device_names_the_table_and_key() {
    let e = parse("title = \"t\"\n[device]\nlicense = \"valid\"\n[[step]]\nlink = \"up\"\n")
        .unwrap_err();
    assert_eq!(e.step, None);
    assert!(
        e.to_string()
            .starts_with("scenarios/x.toml: unknown key `license` in [device], expected one of"),
        "{e}"
    );
    assert!(e.cause.contains("`licence`"), "lists the allowed keys: {e}");

    let e = parse("title = \"t\"\n[controller]\ncycle = 4\n[[step]]\nlink = \"up\"\n").unwrap_err();
    assert!(
        e.cause.starts_with("unknown key `cycle` in [controller]"),
        "{e}"
    );
}

#[test]
fn unknown_key_in_a_step_names_the_step_and_key() {
    let e = parse(
        "title = \"t\"\n[[step]]\nlink = \"up\"\n[[step]]\nlink = \"down\"\n\
         [[step]]\npause = 10\nmillis = 5\n",
    )
    .unwrap_err();
    assert_eq!(e.step, Some(3));
    assert_eq!(
        e.to_string(),
        "scenarios/x.toml: step 3: unknown key `millis` in a pause step, expected `pause` or `note`"
    );

    // An option of another action is unknown in this one.
    let e = one_step("call = \"GET /a\"\nhex = \"00\"").unwrap_err();
    assert!(
        e.cause.starts_with("unknown key `hex` in a call step"),
        "{e}"
    );
    let e = one_step("kill = true\nsignal = 9").unwrap_err();
    assert!(
        e.cause
            .starts_with("unknown key `signal` in a restart step"),
        "{e}"
    );
    let e = one_step("call = \"GET /a\"\nassert = { x = { near = 1 } }").unwrap_err();
    assert!(
        e.cause
            .starts_with("unknown operator `near` in `assert.x`, expected one of `eq`"),
        "{e}"
    );
}

#[test]
fn wrong_types_name_the_key_path() {
    let cases = [
        (
            "title = 1\n[[step]]\nlink = \"up\"\n",
            None,
            "`title`: invalid type: integer `1`, expected a string",
        ),
        (
            "title = \"t\"\n[device]\nstart = \"yes\"\n[[step]]\nlink = \"up\"\n",
            None,
            "`device.start`: invalid type: string \"yes\", expected a boolean",
        ),
        (
            "title = \"t\"\n[controller]\ncycle_ms = \"4\"\n[[step]]\nlink = \"up\"\n",
            None,
            "`controller.cycle_ms`: invalid type: string \"4\", expected a number",
        ),
        (
            "title = \"t\"\n[[step]]\nlink = \"up\"\n[[step]]\ncall = \"GET /a\"\nexpect = \"200\"\n",
            Some(2),
            "`expect`: invalid type: string \"200\", expected a non-negative integer",
        ),
        (
            "title = \"t\"\n[[step]]\ncall = \"GET /a\"\nrepeat = -1\n",
            Some(1),
            "`repeat`: invalid value: integer `-1`, expected a non-negative integer",
        ),
        (
            "title = \"t\"\n[[step]]\ncall = \"GET /a\"\nheaders = { accept = 1 }\n",
            Some(1),
            "`headers.accept`: invalid type: integer `1`, expected a string",
        ),
        (
            "title = \"t\"\n[[step]]\nwait = \"GET /a\"\nwithin_ms = 1\nuntil = { n = { gt = \"0\" } }\n",
            Some(1),
            "`until.n.gt`: invalid type: string \"0\", expected a number",
        ),
        (
            "title = \"t\"\n[[step]]\nlink = 1\n",
            Some(1),
            "`link`: invalid type, expected a string",
        ),
        (
            "title = \"t\"\n[[step]]\nlink = \"sideways\"\n",
            Some(1),
            "`link`: unknown variant `sideways`, expected `down` or `up`",
        ),
        (
            "title = \"t\"\n[device]\nnic = \"eth0\"\n[[step]]\nlink = \"up\"\n",
            None,
            "`device.nic`: unknown variant `eth0`, expected `veth` or `missing`",
        ),
    ];
    for (text, step, cause) in cases {
        let e = parse(text).unwrap_err();
        assert_eq!((e.step, e.cause.as_str()), (step, cause), "{text}");
    }
}

#[test]
fn a_step_has_exactly_one_action() {
    let e = one_step("call = \"GET /a\"\nwait = \"GET /b\"").unwrap_err();
    assert_eq!(e.step, Some(1));
    assert_eq!(e.cause, "more than one action in one step: call, wait");
    let e = one_step("restart = true\nkill = true").unwrap_err();
    assert_eq!(e.cause, "more than one action in one step: restart, kill");

    let e = parse("title = \"t\"\n[[step]]\nlink = \"up\"\n[[step]]\nnote = \"what now\"\n")
        .unwrap_err();
    assert_eq!(e.step, Some(2));
    assert!(
        e.cause
            .starts_with("no action: a step needs one of call, wait,"),
        "{e}"
    );
}

#[test]
fn value_checks_follow_the_types() {
    let e = one_step("netem = true\ndelay_ms = 60001").unwrap_err();
    assert_eq!(
        e.cause,
        format!("`delay_ms` must be 0..{MAX_NETEM_DELAY_MS}")
    );
    let e = one_step("netem = false\nloss_pct = 101").unwrap_err();
    assert_eq!(e.cause, "`loss_pct` must be 0..100");
    let e = one_step("call = \"GET /a\"\nexpect = 700").unwrap_err();
    assert_eq!(e.cause, "`expect = 700` is not an HTTP status");
    let e = one_step("call = \"GET /a\"\nbody = {}\nbody_size = 3").unwrap_err();
    assert_eq!(e.cause, "use only one of body, raw_body, body_size");
    let e = one_step("call = \"GET /a\"\nkey = true").unwrap_err();
    assert!(e.cause.starts_with("`key` must be false"), "{e}");
    let e = one_step("call = \"GET /a\"\nassert = { x = { gt = 1, lt = 2 } }").unwrap_err();
    assert!(
        e.cause
            .starts_with("the check on `assert.x` must have exactly one operator"),
        "{e}"
    );
    let e = one_step("restart = false").unwrap_err();
    assert_eq!(e.cause, "write `restart = true`");
    let e = one_step("controller = \"set-outputs\"").unwrap_err();
    assert_eq!(e.cause, "controller `set-outputs` needs `hex`");
    let e = one_step("pause = 60001").unwrap_err();
    assert_eq!(e.cause, "`pause` longer than 60 s");
}

#[test]
fn options_become_the_public_types() {
    let s = one_step(
        "call = \"PUT /api/x\"\nkey = false\nheaders = { b = \"2\", a = \"1\" }\n\
         assert = { n = { len = 2 }, m = { one_of = [1, \"a\"] }, k = 3.5 }\n\
         save = { id = \"0.id\" }\nrepeat = 3\nnote = \"why\"",
    )
    .unwrap();
    let Action::Call(c) = &s.steps[0].action else {
        panic!("{:?}", s.steps[0])
    };
    assert_eq!(s.steps[0].note.as_deref(), Some("why"));
    assert_eq!((c.method.as_str(), c.path.as_str()), ("PUT", "/api/x"));
    assert_eq!(c.key, KeyChoice::None);
    assert_eq!(
        c.headers,
        vec![("a".into(), "1".into()), ("b".into(), "2".into())]
    );
    assert_eq!(c.assert["n"], Matcher::Len(2));
    assert_eq!(
        c.assert["m"],
        Matcher::OneOf(vec![Json::from(1), Json::from("a")])
    );
    assert_eq!(c.assert["k"], Matcher::Equals(Json::from(3.5)));
    assert_eq!(c.save["id"], "0.id");
    assert_eq!(c.repeat, 3);

    let s = one_step("kill = true\napi_key = false\nlicence = \"missing\"").unwrap();
    assert_eq!(
        s.steps[0].action,
        Action::Restart {
            kill: true,
            api_key: Some(None),
            licence: Some(LicenceChoice::Missing)
        }
    );
    let s = one_step("controller = \"expect-inputs\"\nhex = \"ff\"\noffset = 2").unwrap();
    assert_eq!(
        s.steps[0].action,
        Action::Controller(ControllerAction::ExpectInputs {
            offset: 2,
            hex: "ff".into(),
            within_ms: 2000
        })
    );
    let s = one_step("controller = \"read-im0\"").unwrap();
    assert_eq!(
        s.steps[0].action,
        Action::Controller(ControllerAction::ReadIm0)
    );
    let s = one_step("netem = false\nloss_pct = 50\ndelay_ms = 10").unwrap();
    assert_eq!(
        s.steps[0].action,
        Action::Netem {
            loss_pct: 0.0,
            delay_ms: 0,
            duplicate_pct: 0.0
        }
    );
    let s = one_step("write_config = \"  <x/>\"").unwrap();
    assert_eq!(
        s.steps[0].action,
        Action::WriteConfig {
            source: ConfigSource::Inline("  <x/>".into())
        }
    );
}
