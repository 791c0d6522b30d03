//! Blocking wrapper: the same calls without async. Each [`BlockingClient`] owns a small tokio
//! runtime (one worker thread) that also runs the process-data flusher and the watcher.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::address::{Address, PlcValue, Value as PlcVal, ValueType};
use crate::client::{Client, ClientOptions, DiagEntry};
use crate::error::{CallResult, Error, Result};
use crate::events::{Event, Watcher};
use crate::model::*;
use crate::process::ProcessData;

/// Blocking client (not for use inside an async context: it blocks the calling thread).
#[derive(Debug, Clone)]
pub struct BlockingClient {
    rt: Arc<tokio::runtime::Runtime>,
    client: Client,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("pn-client")
        .enable_all()
        .build()
        .map_err(|e| {
            Error::new(
                CallResult::NativeError,
                format!("cannot start runtime: {e}"),
            )
        })
}

impl BlockingClient {
    /// Default base URL, optional API key.
    pub fn new(api_key: Option<String>) -> Result<Self> {
        Self::with_options(ClientOptions {
            api_key,
            ..ClientOptions::default()
        })
    }

    pub fn connect(base_url: &str, api_key: Option<String>) -> Result<Self> {
        Self::with_options(ClientOptions {
            base_url: base_url.to_string(),
            api_key,
            ..ClientOptions::default()
        })
    }

    pub fn with_options(o: ClientOptions) -> Result<Self> {
        let client = Client::with_options(o)?;
        Ok(BlockingClient {
            rt: Arc::new(runtime()?),
            client,
        })
    }

    /// The async client inside.
    pub fn async_client(&self) -> &Client {
        &self.client
    }

    pub fn status(&self) -> Result<Status> {
        self.rt.block_on(self.client.status())
    }
    pub fn io(&self) -> Result<IoSnapshot> {
        self.rt.block_on(self.client.io())
    }
    pub fn write_io(&self, offset: u64, data: &[u8]) -> Result<IoWriteResponse> {
        self.rt.block_on(self.client.write_io(offset, data))
    }
    pub fn diag(&self) -> Result<Diag> {
        self.rt.block_on(self.client.diag())
    }
    pub fn diag_write(&self, body: &Value) -> Result<Value> {
        self.rt.block_on(self.client.diag_write(body))
    }
    pub fn diag_add(&self, e: &DiagEntry) -> Result<Value> {
        self.rt.block_on(self.client.diag_add(e))
    }
    pub fn diag_update(&self, e: &DiagEntry) -> Result<Value> {
        self.rt.block_on(self.client.diag_update(e))
    }
    pub fn diag_remove(&self, e: &DiagEntry) -> Result<Value> {
        self.rt.block_on(self.client.diag_remove(e))
    }
    pub fn alarms(&self) -> Result<Vec<AlarmItem>> {
        self.rt.block_on(self.client.alarms())
    }
    pub fn alarm_history(&self) -> Result<Vec<AlarmItem>> {
        self.rt.block_on(self.client.alarm_history())
    }
    pub fn ack_alarm(&self, id: &str) -> Result<OkResult> {
        self.rt.block_on(self.client.ack_alarm(id))
    }
    pub fn ack_all(&self) -> Result<OkResult> {
        self.rt.block_on(self.client.ack_all())
    }
    pub fn im(&self) -> Result<Im> {
        self.rt.block_on(self.client.im())
    }
    pub fn records(&self) -> Result<Records> {
        self.rt.block_on(self.client.records())
    }
    pub fn start(&self) -> Result<CommandResult> {
        self.rt.block_on(self.client.start())
    }
    pub fn stop(&self) -> Result<CommandResult> {
        self.rt.block_on(self.client.stop())
    }
    pub fn reset(&self, mode: ResetMode) -> Result<ResetResult> {
        self.rt.block_on(self.client.reset(mode))
    }
    pub fn set_high_resolution_timer(&self, enable: bool) -> Result<OkResult> {
        self.rt
            .block_on(self.client.set_high_resolution_timer(enable))
    }
    pub fn reload_config(&self) -> Result<CommandResult> {
        self.rt.block_on(self.client.reload_config())
    }
    pub fn reload_config_with(&self, body: &Value) -> Result<CommandResult> {
        self.rt.block_on(self.client.reload_config_with(body))
    }
    pub fn info(&self) -> Result<Value> {
        self.rt.block_on(self.client.info())
    }
    pub fn wait_ready(&self, deadline: Duration) -> Result<Value> {
        self.rt.block_on(self.client.wait_ready(deadline))
    }

    /// The cached process-data handle (its flusher runs on this client's runtime).
    pub fn process_data(&self) -> BlockingProcessData {
        let _g = self.rt.enter();
        BlockingProcessData {
            rt: self.rt.clone(),
            pd: self.client.process_data(),
        }
    }

    /// Change events by polling every `period`.
    pub fn watch(&self, period: Duration) -> BlockingWatcher {
        let _g = self.rt.enter();
        BlockingWatcher {
            rt: self.rt.clone(),
            w: self.client.watch(period),
        }
    }
}

/// Blocking [`ProcessData`].
#[derive(Debug, Clone)]
pub struct BlockingProcessData {
    rt: Arc<tokio::runtime::Runtime>,
    pd: ProcessData,
}

impl BlockingProcessData {
    pub fn read(&self, addr: &Address) -> Result<PlcVal> {
        self.rt.block_on(self.pd.read(addr))
    }
    pub fn read_value(&self, addr: &Address, ty: ValueType) -> Result<PlcVal> {
        self.rt.block_on(self.pd.read_value(addr, ty))
    }
    pub fn read_bytes(&self, addr: &Address, len: usize) -> Result<Vec<u8>> {
        self.rt.block_on(self.pd.read_bytes(addr, len))
    }
    pub fn get<T: PlcValue>(&self, addr: &Address) -> Result<T> {
        self.rt.block_on(self.pd.get::<T>(addr))
    }
    pub fn set<T: PlcValue>(&self, addr: &Address, v: T) -> Result<()> {
        self.rt.block_on(self.pd.set(addr, v))
    }
    pub fn write_value(&self, addr: &Address, v: PlcVal) -> Result<()> {
        self.rt.block_on(self.pd.write_value(addr, v))
    }
    pub fn write_bytes(&self, addr: &Address, data: &[u8]) -> Result<()> {
        self.rt.block_on(self.pd.write_bytes(addr, data))
    }
    pub fn flush(&self) -> Result<Option<IoWriteResponse>> {
        self.rt.block_on(self.pd.flush())
    }
    pub fn sync(&self) -> Result<Option<IoWriteResponse>> {
        self.rt.block_on(self.pd.sync())
    }
    pub fn last_write(&self) -> Option<IoWriteResponse> {
        self.rt.block_on(self.pd.last_write())
    }
    pub fn flush_count(&self) -> u64 {
        self.rt.block_on(self.pd.flush_count())
    }
    pub fn snapshot(&self) -> Result<IoSnapshot> {
        self.rt.block_on(self.pd.snapshot())
    }
    pub fn invalidate(&self) {
        self.rt.block_on(self.pd.invalidate())
    }
    pub fn close(&self) -> Result<()> {
        self.rt.block_on(self.pd.close())
    }
    /// The async handle inside.
    pub fn async_handle(&self) -> &ProcessData {
        &self.pd
    }
}

/// Blocking [`Watcher`].
#[derive(Debug)]
pub struct BlockingWatcher {
    rt: Arc<tokio::runtime::Runtime>,
    w: Watcher,
}

impl BlockingWatcher {
    /// The next event, waiting at most `timeout` (None on timeout or when stopped).
    pub fn recv_timeout(&mut self, timeout: Duration) -> Option<Event> {
        let w = &mut self.w;
        self.rt
            .block_on(async { tokio::time::timeout(timeout, w.recv()).await.ok().flatten() })
    }
}
