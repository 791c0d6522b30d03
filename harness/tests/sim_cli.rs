//! `pn-lab sim`: the deterministic simulator of both peers as a command. A range of seeds
//! holds the invariants (exit 0), a planted bug is caught (exit 1 with the violation in
//! words), the same seed prints the same run twice, and the link it writes as a pcap is
//! clean to tshark, an independent dissector (the alarm frames carry real AlarmNotification
//! blocks, not placeholders; the LLDPDUs are the device's LLDP agent's).

use std::process::Command;

fn pn_lab(args: &[&str]) -> (Option<i32>, String) {
    let bin = pn_testkit::daemon::bin_dir().join("pn-lab");
    assert!(bin.exists(), "{} not built", bin.display());
    let o = Command::new(bin).arg("sim").args(args).output().unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn seeds_pass_and_replay_the_same() {
    let (code, out) = pn_lab(&["--seed", "100", "--seeds", "30"]);
    assert_eq!(code, Some(0), "{out}");
    assert!(
        out.contains("30 seeds, 0 with invariant violations"),
        "{out}"
    );
    let (_, again) = pn_lab(&["--seed", "100", "--seeds", "30"]);
    assert_eq!(out, again, "a seed's run is a pure function of the seed");
}

/// The CI's run of the simulator: ten thousand seeds (the figure), on every core,
/// printing only the runs that break an invariant.
#[test]
fn ten_thousand_seeds_hold_the_invariants() {
    let (code, out) = pn_lab(&["--seed", "1", "--seeds", "10000", "--quiet"]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out.trim(), "10000 seeds, 0 with invariant violations");
}

#[test]
fn a_planted_watchdog_bug_fails_with_the_violation_in_words() {
    let (code, out) = pn_lab(&[
        "--seed",
        "1",
        "--seeds",
        "20",
        "--plant",
        "watchdog-off-by-one",
    ]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("consumer tripped after") && out.contains("data-hold bound"),
        "{out}"
    );
    // Each failing seed says how to replay it, and the replay shows the steps.
    assert!(
        out.contains("replay: pn-lab sim --seed ") && out.contains("--steps --pcap"),
        "{out}"
    );
    let (_, steps) = pn_lab(&["--seed", "1", "--plant", "watchdog-off-by-one", "--steps"]);
    assert!(
        steps.contains("device -> controller  FrameID 0x8001"),
        "{steps}"
    );
    assert!(
        steps.contains("** the device's data-hold timer expired"),
        "{steps}"
    );
}

#[test]
fn the_simulated_link_is_clean_to_tshark() {
    if !pn_testkit::env::require_tshark() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pcap = dir.path().join("sim.pcap");
    let (code, out) = pn_lab(&["--seed", "1", "--pcap", pcap.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
    let pkts = pn_testkit::tshark::dissect_file(&pcap, &[]).unwrap();
    assert!(pkts.len() > 1000, "{} frames", pkts.len());
    let (mut alarms, mut cm, mut lldp) = (0, 0, 0);
    for (i, p) in pkts.iter().enumerate() {
        p.assert_clean(&format!("simulated frame {}", i + 1));
        let protos = p.protocols();
        // RT frames (cyclic, alarms, DCP), the connection management's DCE/RPC datagrams and
        // the service part's LLDPDUs.
        assert!(
            protos.contains("pn_rt") || protos.contains("dcerpc") || protos.contains("lldp"),
            "{protos}"
        );
        lldp += usize::from(protos.contains("lldp"));
        if protos.contains("pn_io") && p.field("pn_io.alarm_type").is_some() {
            alarms += 1;
        }
        // A PNIO-CM call Wireshark's PROFINET dissector decoded (ArgsMaximum of a request).
        if protos.contains("dcerpc") && p.field("pn_io.args_max").is_some() {
            cm += 1;
        }
    }
    assert!(alarms > 0, "no AlarmNotification among the frames");
    assert!(cm > 0, "no PNIO-CM call among the datagrams");
    assert!(lldp > 0, "no LLDPDU among the frames");
}
