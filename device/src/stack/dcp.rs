//! The device's DCP: the responder is the protocol crate's
//! ([`pn_protocol::machine::dcp_responder`]); here its events become runtime events, its
//! durability hook commits through the runtime, and a DCP-assigned IP suite is applied to the
//! NIC.

use std::net::Ipv4Addr;
use std::sync::Arc;

pub use pn_protocol::machine::dcp_responder::{
    ip_suite_valid, DcpEvent, DcpIdentity, DcpOutput, DcpResponder, DurableHook, HELLO_COUNT,
    HELLO_INTERVAL, MAX_DELAYED,
};

use crate::dataplane::{EventSink, StackEvent};

/// The runtime event of a DCP event, where one exists (`IpAssigned` needs the apply result).
pub fn to_stack_event(ev: &DcpEvent, ip_applied: Option<Result<(), String>>) -> Option<StackEvent> {
    Some(match ev {
        DcpEvent::NameAssigned { name, permanent } => StackEvent::DcpNameAssigned {
            name: name.clone(),
            permanent: *permanent,
        },
        DcpEvent::IpAssigned {
            ip,
            mask,
            gateway,
            permanent,
        } => StackEvent::DcpIpAssigned {
            ip: *ip,
            mask: *mask,
            gateway: *gateway,
            permanent: *permanent,
            applied: ip_applied.unwrap_or(Ok(())),
        },
        DcpEvent::Signal => StackEvent::DcpSignal,
        DcpEvent::ResetToFactory { qualifier, mode } => StackEvent::DcpResetToFactory {
            qualifier: *qualifier,
            mode: *mode,
        },
        DcpEvent::AbortArs { .. } => return None,
    })
}

/// The responder's durability hook: the remanent part of a DCP event is committed through the
/// runtime (stored durably) before the Set is answered.
pub fn durable_through(sink: EventSink) -> DurableHook {
    Arc::new(move |ev: &DcpEvent| {
        let Some(se) = to_stack_event(ev, None) else {
            return Ok(());
        };
        sink.commit(&se).inspect_err(|e| {
            tracing::error!("DCP Set refused, the value cannot be stored: {e}");
        })
    })
}

/// Prefix length of a contiguous mask.
fn prefix_len(mask: Ipv4Addr) -> u32 {
    u32::from(mask).leading_ones()
}

/// Apply a DCP-assigned IP suite to `nic` with iproute2 (`ip addr`/`ip route`, needs
/// CAP_NET_ADMIN; runs in the caller's network namespace). `old` is the address this service
/// put on the NIC before (removed first; other addresses of the NIC are left alone). An
/// all-zero IP only removes `old`. The gateway becomes the default route unless it is 0.0.0.0
/// or equal to the IP (PROFINET's "no gateway"). Returns a human-readable result text for
/// `dcpIpApplyMessage`.
pub fn apply_ip(
    nic: &str,
    old: Option<(Ipv4Addr, Ipv4Addr)>,
    ip: Ipv4Addr,
    mask: Ipv4Addr,
    gateway: Ipv4Addr,
) -> Result<String, String> {
    if !crate::dataplane::valid_nic_name(nic) {
        return Err(format!("invalid interface name {nic:?}"));
    }
    let run = |args: &[&str]| -> Result<(), String> {
        let out = std::process::Command::new("ip")
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("cannot run ip: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "ip {}: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ))
        }
    };
    if let Some((oip, omask)) = old {
        if !oip.is_unspecified() && (oip, omask) != (ip, mask) {
            let cidr = format!("{oip}/{}", prefix_len(omask));
            // The old address may already be gone (removed by hand): not an error.
            let _ = run(&["-4", "addr", "del", &cidr, "dev", nic]);
        }
    }
    if ip.is_unspecified() {
        return Ok(format!("IP address removed from {nic}"));
    }
    let cidr = format!("{ip}/{}", prefix_len(mask));
    run(&["-4", "addr", "replace", &cidr, "dev", nic])?;
    if !gateway.is_unspecified() && gateway != ip {
        let gw = gateway.to_string();
        run(&[
            "-4", "route", "replace", "default", "via", &gw, "dev", nic, "onlink",
        ])
        .map_err(|e| format!("{cidr} applied to {nic}, but the default route failed: {e}"))?;
        return Ok(format!("{cidr} applied to {nic}, default gateway {gw}"));
    }
    Ok(format!("{cidr} applied to {nic}"))
}
