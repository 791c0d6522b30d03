//! `pn-controller`: command-line PROFINET IO controller simulator. See the "pn-controller"
//! section of the repository README for the commands.

use std::io::Write;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Args, Parser, Subcommand};
use pn_controller::{
    parse_mac, ArConfig, ArState, Controller, ControllerConfig, DeviceConfig, DeviceInfo,
    DeviceModel, Error, Event, Gsdml, MacAddr, RealtimeOptions, Startup,
};
use serde_json::json;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Exit code when the device's modules differ from the expected ones (see
/// `--accept-module-diff`).
const EXIT_MODULE_MISMATCH: i32 = 3;

const EXIT_CODES: &str = "\
Exit codes:
  0  success (also after Ctrl-C or SIGTERM: the AR is released first)
  1  the command failed (the message says why)
  2  usage error
  3  the device's modules differ from the expected ones (ModuleDiffBlock); the AR was released.
     --accept-module-diff runs anyway";

#[derive(Parser)]
#[command(
    name = "pn-controller",
    version,
    about = "PROFINET IO controller simulator (RT_CLASS_1/RT_CLASS_2 frames, legacy and advanced startup)",
    after_help = EXIT_CODES
)]
struct Cli {
    /// Network interface to use.
    #[arg(short, long, global = true, default_value = "eth0")]
    interface: String,
    /// Machine-readable JSON output: one JSON document per result (discover: one array of the
    /// devices), connect-and-run one object per refresh and a last one with "end" when it ends.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Clone)]
struct Target {
    /// Device NameOfStation (resolved with DCP Identify).
    #[arg(long, conflicts_with = "mac")]
    station: Option<String>,
    /// Device MAC address.
    #[arg(long)]
    mac: Option<String>,
}

#[derive(Args, Clone)]
struct DeviceDesc {
    /// The device's runtime configuration XML (pn-device format).
    #[arg(long, conflicts_with = "gsdml")]
    config: Option<PathBuf>,
    /// A GSDML file (use with --modules and --station).
    #[arg(long)]
    gsdml: Option<PathBuf>,
    /// Modules for --gsdml: "SLOT=MODULE,..." with MODULE a ModuleItem ID or ident number.
    #[arg(long, default_value = "")]
    modules: String,
    /// NameOfStation of the device (default: from the configuration / GSDML).
    #[arg(long)]
    station: Option<String>,
    /// Device IP (default: what the device reports over DCP, else the configuration's).
    #[arg(long)]
    ip: Option<Ipv4Addr>,
    /// Assign --ip temporarily over DCP if the device has another address.
    #[arg(long)]
    assign_ip: bool,
    /// Send clock in ms (the controller's base tick).
    #[arg(long, default_value_t = 1)]
    send_clock_ms: u16,
    /// Send clock as SendClockFactor in 31.25 us units (overrides --send-clock-ms; e.g. 16 =
    /// 500 us, for devices that support it).
    #[arg(long)]
    send_clock_factor: Option<u16>,
    /// Reduction ratio: IOCR cycle = send clock * ratio.
    #[arg(long, default_value_t = 4)]
    reduction_ratio: u16,
    /// Watchdog and data-hold factor of both IOCRs.
    #[arg(long, default_value_t = 3)]
    data_hold_factor: u16,
    /// StartupMode of the Connect: advanced (RT_CLASS_2 FrameIDs, as S7-1500 CPUs connect) or
    /// legacy (RT_CLASS_1 FrameIDs, for devices without advanced startup).
    #[arg(long, value_enum, default_value_t = StartupArg::Advanced)]
    startup: StartupArg,
    /// Run the cyclic thread under SCHED_FIFO with this priority.
    #[arg(long)]
    rt_priority: Option<i32>,
    /// mlockall() the process.
    #[arg(long)]
    mlock: bool,
    /// Run even when the device's ModuleDiffBlock says its modules differ from the ones
    /// expected (wrong or missing module or submodule); without it the AR is released and the
    /// command exits with code 3.
    #[arg(long)]
    accept_module_diff: bool,
}

/// `--startup` (the protocol crate's `Startup`, which knows nothing of command lines).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum StartupArg {
    Advanced,
    Legacy,
}

impl From<StartupArg> for Startup {
    fn from(a: StartupArg) -> Startup {
        match a {
            StartupArg::Advanced => Startup::Advanced,
            StartupArg::Legacy => Startup::Legacy,
        }
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// DCP Identify All: list the devices on the link.
    Discover {
        /// ResponseDelayFactor (answers spread over factor * 10 ms).
        #[arg(long, default_value_t = 50)]
        delay_factor: u16,
    },
    /// DCP Set NameOfStation ("" removes the name).
    SetName {
        #[command(flatten)]
        target: Target,
        name: String,
        #[arg(long)]
        permanent: bool,
    },
    /// DCP Set IP parameter.
    SetIp {
        #[command(flatten)]
        target: Target,
        ip: Ipv4Addr,
        #[arg(long, default_value = "255.255.255.0")]
        mask: Ipv4Addr,
        #[arg(long, default_value = "0.0.0.0")]
        gateway: Ipv4Addr,
        #[arg(long)]
        permanent: bool,
    },
    /// DCP Control/Signal (flash the LED).
    Signal {
        #[command(flatten)]
        target: Target,
    },
    /// DCP Control/ResetToFactory.
    Reset {
        #[command(flatten)]
        target: Target,
        /// communication | application | engineering | all | device | restore, or a number.
        #[arg(long, default_value = "communication")]
        mode: String,
    },
    /// Read a record: implicit read (no AR) unless --config/--gsdml is given (then inside an AR).
    ReadRecord {
        #[command(flatten)]
        dev: DeviceDesc,
        #[arg(long, default_value_t = 0, value_parser = parse_u16)]
        slot: u16,
        /// Subslot (decimal or 0x hex), e.g. 0x8001 for the first port.
        #[arg(long, default_value_t = 1, value_parser = parse_u16)]
        subslot: u16,
        /// Record index (decimal or 0x hex), e.g. 0xAFF0 for I&M0.
        #[arg(long, value_parser = parse_u16)]
        index: u16,
        #[arg(long, default_value_t = 4096)]
        max_len: u32,
    },
    /// Connect, write a record inside the AR, release.
    WriteRecord {
        #[command(flatten)]
        dev: DeviceDesc,
        #[arg(long, default_value_t = 0, value_parser = parse_u16)]
        slot: u16,
        /// Subslot (decimal or 0x hex), e.g. 0x8001 for the first port.
        #[arg(long, default_value_t = 1, value_parser = parse_u16)]
        subslot: u16,
        #[arg(long, value_parser = parse_u16)]
        index: u16,
        /// Record data as hex.
        #[arg(long)]
        data: String,
    },
    /// Connect and run data exchange with a live view of IO and status.
    ConnectAndRun {
        #[command(flatten)]
        dev: DeviceDesc,
        /// Output data (hex) to send, from offset 0.
        #[arg(long, default_value = "")]
        outputs: String,
        /// Stop after this many seconds (default: until Ctrl-C).
        #[arg(long)]
        duration: Option<f64>,
        /// Live view refresh period in ms.
        #[arg(long, default_value_t = 500)]
        refresh_ms: u64,
        /// At the end (duration, Ctrl-C, SIGTERM) do not release the AR: just stop sending, so
        /// the device's data-hold watchdog ends it (for testing the device's supervision).
        /// Without it the AR is released.
        #[arg(long)]
        no_release: bool,
    },
}

fn parse_u16(s: &str) -> Result<u16, String> {
    let s = s.trim();
    let r = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u16::from_str_radix(h, 16)
    } else {
        s.parse()
    };
    r.map_err(|e| format!("'{s}': {e}"))
}

fn reset_mode(s: &str) -> Result<u16, Error> {
    use pn_protocol::wire::dcp::qualifier as q;
    Ok(match s {
        "communication" => q::RESET_COMMUNICATION_PARAMETER,
        "application" => q::RESET_APPLICATION_DATA,
        "engineering" => q::RESET_ENGINEERING_PARAMETER,
        "all" => q::RESET_ALL_STORED_DATA,
        "device" => q::RESET_DEVICE,
        "restore" => q::RESET_AND_RESTORE,
        n => parse_u16(n).map_err(Error::Config)?,
    })
}

fn resolve(ctl: &Controller, t: &Target) -> Result<(MacAddr, Option<DeviceInfo>), Error> {
    if let Some(m) = &t.mac {
        return parse_mac(m)
            .map(|m| (m, None))
            .ok_or_else(|| Error::Config(format!("bad MAC '{m}'")));
    }
    let name = t
        .station
        .as_deref()
        .ok_or_else(|| Error::Config("give --station NAME or --mac MAC".into()))?;
    let d = ctl
        .dcp_identify_name(name, Duration::from_millis(2000))?
        .ok_or_else(|| Error::NotFound(format!("no device named '{name}' answers")))?;
    Ok((d.mac, Some(d)))
}

fn model_of(dev: &DeviceDesc) -> Result<Option<(DeviceModel, Option<Ipv4Addr>)>, Error> {
    if let Some(p) = &dev.config {
        let c = DeviceConfig::load(p).map_err(Error::Config)?;
        let mut m = c.model;
        if let Some(s) = &dev.station {
            m.station_name = s.clone();
        }
        return Ok(Some((m, c.ip)));
    }
    if let Some(p) = &dev.gsdml {
        let g = Gsdml::load(p).map_err(Error::Config)?;
        let slots = pn_controller::gsdml::parse_slot_list(&dev.modules).map_err(Error::Config)?;
        let station = dev
            .station
            .clone()
            .or(g.dns_name.clone())
            .ok_or_else(|| Error::Config("give --station".into()))?;
        return Ok(Some((
            g.device_model(&station, &slots).map_err(Error::Config)?,
            None,
        )));
    }
    Ok(None)
}

fn start(cli: &Cli, dev: Option<&DeviceDesc>) -> Result<Controller, Error> {
    let mut c = ControllerConfig::new(&cli.interface);
    // Only an AR needs the PNIO-CM port itself (the device sends ApplicationReady there): DCP
    // and implicit reads work beside a running connect-and-run.
    c.rpc_port_required = dev.is_some_and(|d| d.config.is_some() || d.gsdml.is_some());
    if let Some(d) = dev {
        c.send_clock_factor = d
            .send_clock_factor
            .unwrap_or(d.send_clock_ms.clamp(1, 4) * 32)
            .clamp(1, 128);
        c.realtime = RealtimeOptions {
            fifo_priority: d.rt_priority,
            lock_memory: d.mlock,
        };
    }
    Controller::start(c)
}

fn connect(
    ctl: &Controller,
    dev: &DeviceDesc,
    outputs: Vec<u8>,
) -> Result<pn_controller::ArHandle, Error> {
    let (model, cfg_ip) =
        model_of(dev)?.ok_or_else(|| Error::Config("give --config or --gsdml".into()))?;
    let mut ar = ArConfig::new(model);
    ar.device_ip = dev.ip.or(if dev.assign_ip { cfg_ip } else { None });
    ar.assign_ip = dev.assign_ip;
    ar.timing.reduction_ratio = dev.reduction_ratio;
    ar.timing.watchdog_factor = dev.data_hold_factor;
    ar.timing.data_hold_factor = dev.data_hold_factor;
    ar.timing.startup = dev.startup.into();
    ar.initial_outputs = outputs;
    let h = ctl.connect(ar)?;
    if !dev.accept_module_diff {
        let wrong = h
            .module_diff()
            .map(|d| pn_controller::cmreq::module_diff_mismatches(&d))
            .unwrap_or_default();
        if !wrong.is_empty() {
            let _ = h.release();
            return Err(Error::ModuleMismatch(wrong));
        }
    }
    Ok(h)
}

fn out(json: bool, v: serde_json::Value, text: String) {
    if json {
        println!("{v}");
    } else {
        println!("{text}");
    }
}

fn run(cli: Cli) -> Result<(), Error> {
    match &cli.cmd {
        Cmd::Discover { delay_factor } => discover(&cli, *delay_factor)?,
        Cmd::SetName {
            target,
            name,
            permanent,
        } => {
            let ctl = start(&cli, None)?;
            let (mac, _) = resolve(&ctl, target)?;
            ctl.dcp_set_name(mac, name, *permanent)?;
            out(
                cli.json,
                json!({"ok": true, "mac": mac.to_string(), "name": name, "permanent": permanent}),
                format!("{mac}: NameOfStation set to '{name}'"),
            );
        }
        Cmd::SetIp {
            target,
            ip,
            mask,
            gateway,
            permanent,
        } => {
            let ctl = start(&cli, None)?;
            let (mac, _) = resolve(&ctl, target)?;
            ctl.dcp_set_ip(mac, *ip, *mask, *gateway, *permanent)?;
            out(
                cli.json,
                json!({"ok": true, "mac": mac.to_string(), "ip": ip.to_string(), "mask": mask.to_string(), "gateway": gateway.to_string(), "permanent": permanent}),
                format!("{mac}: IP set to {ip}/{mask} gw {gateway}"),
            );
        }
        Cmd::Signal { target } => {
            let ctl = start(&cli, None)?;
            let (mac, _) = resolve(&ctl, target)?;
            ctl.dcp_signal(mac)?;
            out(
                cli.json,
                json!({"ok": true, "mac": mac.to_string()}),
                format!("{mac}: signal sent"),
            );
        }
        Cmd::Reset { target, mode } => {
            let ctl = start(&cli, None)?;
            let (mac, _) = resolve(&ctl, target)?;
            let m = reset_mode(mode)?;
            ctl.dcp_reset_to_factory(mac, m)?;
            out(
                cli.json,
                json!({"ok": true, "mac": mac.to_string(), "mode": m}),
                format!("{mac}: reset to factory ({mode})"),
            );
        }
        Cmd::ReadRecord {
            dev,
            slot,
            subslot,
            index,
            max_len,
        } => read_record(&cli, dev, *slot, *subslot, *index, *max_len)?,
        Cmd::WriteRecord {
            dev,
            slot,
            subslot,
            index,
            data,
        } => {
            let bytes = hex::decode(data.trim_start_matches("0x"))
                .map_err(|e| Error::Config(format!("--data: {e}")))?;
            let ctl = start(&cli, Some(dev))?;
            let h = connect(&ctl, dev, Vec::new())?;
            let r = h.write_record(*slot, *subslot, *index, &bytes);
            let _ = h.release();
            r?;
            out(
                cli.json,
                json!({"ok": true, "slot": slot, "subslot": subslot, "index": index, "length": bytes.len()}),
                format!("wrote {} bytes", bytes.len()),
            );
        }
        Cmd::ConnectAndRun {
            dev,
            outputs,
            duration,
            refresh_ms,
            no_release,
        } => connect_and_run(&cli, dev, outputs, *duration, *refresh_ms, *no_release)?,
    }
    Ok(())
}

/// `discover`: DCP Identify All, the answers as a table or JSON.
fn discover(cli: &Cli, delay_factor: u16) -> Result<(), Error> {
    let ctl = start(cli, None)?;
    let devs = ctl.dcp_identify_all(delay_factor, Duration::from_millis(300))?;
    if cli.json {
        println!("{}", serde_json::to_string(&devs).unwrap_or_default());
    } else {
        println!(
            "{:<17}  {:<30} {:<15} {:<11} type",
            "MAC", "NameOfStation", "IP", "vendor/dev"
        );
        for d in &devs {
            println!(
                "{:<17}  {:<30} {:<15} {:<11} {}",
                d.mac.to_string(),
                d.name_of_station,
                d.ip.map(|i| i.to_string()).unwrap_or_default(),
                match (d.vendor_id, d.device_id) {
                    (Some(v), Some(i)) => format!("{v:04x}/{i:04x}"),
                    _ => String::new(),
                },
                d.type_of_station
            );
        }
        println!("{} device(s)", devs.len());
    }
    Ok(())
}

/// `read-record`: over an AR when the device is described by a configuration or GSDML, else an implicit read (IP and identity from DCP).
fn read_record(
    cli: &Cli,
    dev: &DeviceDesc,
    slot: u16,
    subslot: u16,
    index: u16,
    max_len: u32,
) -> Result<(), Error> {
    let ctl = start(cli, Some(dev))?;
    let data = if dev.config.is_some() || dev.gsdml.is_some() {
        let h = connect(&ctl, dev, Vec::new())?;
        let r = h.read_record(slot, subslot, index, max_len);
        let _ = h.release();
        r?
    } else {
        let station = dev
            .station
            .clone()
            .ok_or_else(|| Error::Config("give --station".into()))?;
        let d = ctl
            .dcp_identify_name(&station, Duration::from_millis(2000))?
            .ok_or_else(|| Error::NotFound(format!("no device named '{station}'")))?;
        let ip = dev
            .ip
            .or(d.ip)
            .filter(|i| !i.is_unspecified())
            .ok_or_else(|| Error::Config("device has no IP".into()))?;
        ctl.read_implicit(
            ip,
            d.vendor_id.unwrap_or(0),
            d.device_id.unwrap_or(0),
            slot,
            subslot,
            index,
            max_len,
        )?
    };
    out(
        cli.json,
        json!({"ok": true, "slot": slot, "subslot": subslot, "index": index, "length": data.len(), "dataHex": hex::encode(&data)}),
        format!("{} bytes: {}", data.len(), hex::encode(&data)),
    );
    Ok(())
}

/// `connect-and-run`: one AR with the given outputs, a live view until the duration, Ctrl-C or SIGTERM ends it, then a release (unless `--no-release`).
fn connect_and_run(
    cli: &Cli,
    dev: &DeviceDesc,
    outputs: &str,
    duration: Option<f64>,
    refresh_ms: u64,
    no_release: bool,
) -> Result<(), Error> {
    let o = hex::decode(outputs.trim_start_matches("0x"))
        .map_err(|e| Error::Config(format!("--outputs: {e}")))?;
    let ctl = start(cli, Some(dev))?;
    let events = ctl.events();
    let h = connect(&ctl, dev, o)?;
    // Ctrl-C and SIGTERM end the run like the duration does: the AR is released
    // (unless --no-release) instead of being left to the device's watchdog.
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, stop.clone()).map_err(Error::Io)?;
    }
    let t0 = Instant::now();
    let end = duration.map(|d| t0 + Duration::from_secs_f64(d.max(0.0)));
    let mut next_view = t0;
    loop {
        if stop.load(Ordering::Relaxed) || end.is_some_and(|e| Instant::now() >= e) {
            break;
        }
        if Instant::now() < next_view {
            // Short naps: a signal is acted on within 20 ms.
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        next_view = Instant::now() + Duration::from_millis((refresh_ms).max(50));
        let st = h.status();
        let inp = h.inputs();
        let ts = ctl.tick_stats();
        let evs: Vec<Event> = events.try_iter().collect();
        if cli.json {
            println!(
                "{}",
                json!({"t": t0.elapsed().as_secs_f64(), "status": st, "inputs": {"dataHex": hex::encode(&inp.data), "iopsHex": hex::encode(&inp.iops), "iocsHex": hex::encode(&inp.iocs), "dataStatus": inp.data_status, "cycleCounter": inp.cycle_counter}, "outputsHex": hex::encode(h.outputs()), "ticks": ts, "events": evs})
            );
        } else {
            print!("\x1b[2J\x1b[H");
            println!(
                "pn-controller  {}  AR {} '{}' {} ({})  t={:.1}s",
                cli.interface,
                st.id,
                st.station_name,
                st.device_ip,
                st.device_mac,
                t0.elapsed().as_secs_f64()
            );
            println!(
                "state      {}   cycle {} us   frame ids in {:#06x} out {:#06x}",
                st.state, st.cycle_us, st.input_frame_id, st.output_frame_id
            );
            println!(
                "sent       {} frames ({} missed slots)   tick max late {} us, missed ticks {}",
                st.frames_sent, st.missed_send_slots, ts.max_lateness_us, ts.missed_ticks
            );
            println!(
                "received   {} frames ({} new, {} invalid, {} dup)   watchdog expiries {}",
                st.frames_received,
                st.frames_new_data,
                st.frames_invalid,
                st.frames_duplicate,
                st.watchdog_expiries
            );
            println!(
                "inputs     {}   IOPS {}   IOCS {}   DataStatus {}",
                hex::encode(&inp.data),
                hex::encode(&inp.iops),
                hex::encode(&inp.iocs),
                inp.data_status.map_or("none yet".to_string(), |d| {
                    pn_protocol::wire::rt::DataStatus(d).to_string()
                })
            );
            println!("outputs    {}", hex::encode(h.outputs()));
            println!("alarms     {}", st.alarms_received);
            for l in &st.module_diff {
                println!("moduleDiff {l}");
            }
            for e in &evs {
                println!("event      {e}");
            }
            let _ = std::io::stdout().flush();
        }
        if matches!(st.state, ArState::Aborted(_) | ArState::Released) {
            return Err(Error::Aborted(st.state.to_string()));
        }
    }
    let last = h.status();
    if !no_release {
        h.release()?;
    }
    let end = if no_release {
        "stopped without a release"
    } else {
        "released"
    };
    if cli.json {
        println!(
            "{}",
            json!({"t": t0.elapsed().as_secs_f64(), "end": end, "status": last, "ticks": ctl.tick_stats()})
        );
    } else {
        println!("AR {end}");
    }
    Ok(())
}

fn main() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
    let cli = Cli::parse();
    let json = cli.json;
    if let Err(e) = run(cli) {
        if json {
            println!("{}", json!({"ok": false, "error": e.to_string()}));
        } else {
            eprintln!("pn-controller: {e}");
        }
        std::process::exit(match e {
            Error::ModuleMismatch(_) => EXIT_MODULE_MISMATCH,
            _ => 1,
        });
    }
}
