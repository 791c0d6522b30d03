//! [`PnioRequest`] / [`PnioResponse`]: the NDR framing of a PNIO operation's body around the
//! PNIO blocks.

use super::{Drep, Endian, Ndr};
use crate::wire::pnio::PnioStatus;
use crate::wire::{Emit, Error, Result, Writer};

/// Length of the NDR header of a PNIO request body.
pub const PNIO_REQUEST_NDR_LEN: usize = 20;
/// Length of the PNIOStatus + NDR header of a PNIO response body.
pub const PNIO_RESPONSE_NDR_LEN: usize = 20;

/// The body of a PNIO request (Connect, Release, Read, Write, Control, ReadImplicit): ArgsMaximum,
/// ArgsLength, then a conformant varying array (MaximumCount = ArgsMaximum, Offset 0,
/// ActualCount = ArgsLength) holding the big-endian PNIO blocks. MaximumCount is not stored:
/// emit writes `max(ArgsMaximum, ArgsLength)` (equal to ArgsMaximum in every real frame).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PnioRequest {
    /// Largest response the caller accepts (bytes of NDR data).
    pub args_maximum: u32,
    /// The NDR data (PNIO blocks).
    pub data: Vec<u8>,
}

impl PnioRequest {
    pub fn new(args_maximum: u32, data: Vec<u8>) -> PnioRequest {
        PnioRequest { args_maximum, data }
    }

    /// Parse a request body in the byte order of `drep`. Bytes after ActualCount are ignored.
    pub fn parse(body: &[u8], drep: Drep) -> Result<PnioRequest> {
        let e = drep.endian();
        let args_maximum = e.read_u32(body, 0)?;
        let args_len = e.read_u32(body, 4)?;
        let max_count = e.read_u32(body, 8)?;
        let offset = e.read_u32(body, 12)?;
        let actual = e.read_u32(body, 16)?;
        if offset != 0 {
            return Err(Error::Unsupported("NDR array offset other than 0"));
        }
        if actual != args_len {
            return Err(Error::Malformed("NDR ActualCount differs from ArgsLength"));
        }
        if actual > max_count {
            return Err(Error::Malformed("NDR ActualCount above MaximumCount"));
        }
        let end = usize::try_from(actual)
            .ok()
            .and_then(|a| a.checked_add(PNIO_REQUEST_NDR_LEN))
            .ok_or(Error::Truncated)?;
        let data = body
            .get(PNIO_REQUEST_NDR_LEN..end)
            .ok_or(Error::Truncated)?
            .to_vec();
        Ok(PnioRequest { args_maximum, data })
    }
}

/// ArgsLength / ActualCount of `data` (a u32 on the wire).
fn ndr_data_len(data: &[u8]) -> Result<u32> {
    u32::try_from(data.len()).map_err(|_| Error::Malformed("NDR data too long"))
}

/// The conformant varying array after the first four bytes: ArgsLength, MaximumCount,
/// Offset 0, ActualCount, the data.
fn put_array(w: &mut Writer, e: Endian, max_count: u32, data: &[u8]) -> Result<()> {
    let len = ndr_data_len(data)?;
    e.put_u32(&mut w.buf, len);
    e.put_u32(&mut w.buf, max_count);
    e.put_u32(&mut w.buf, 0);
    e.put_u32(&mut w.buf, len);
    w.bytes(data);
    Ok(())
}

/// The request body in the byte order of `drep`.
impl Emit for Ndr<'_, PnioRequest> {
    fn buffer_len(&self) -> usize {
        PNIO_REQUEST_NDR_LEN + self.body.data.len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let (e, b) = (self.drep.endian(), self.body);
        let len = ndr_data_len(&b.data)?;
        e.put_u32(&mut w.buf, b.args_maximum);
        // MaximumCount: ArgsMaximum (as every controller sends), never below ActualCount.
        put_array(w, e, b.args_maximum.max(len), &b.data)
    }
}

/// The body of a PNIO response: PNIOStatus (a u32 in DREP byte order), ArgsLength, then the
/// conformant varying array header (MaximumCount, Offset 0, ActualCount = ArgsLength) and the
/// big-endian PNIO blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PnioResponse {
    pub status: PnioStatus,
    /// MaximumCount of the array: by convention the request's ArgsMaximum (every device in the
    /// fixtures echoes it).
    pub args_maximum: u32,
    /// The NDR data (PNIO blocks); empty in most error responses.
    pub data: Vec<u8>,
}

impl PnioResponse {
    /// A response to `req` with the request's ArgsMaximum as MaximumCount.
    pub fn to_request(req: &PnioRequest, status: PnioStatus, data: Vec<u8>) -> PnioResponse {
        PnioResponse {
            status,
            args_maximum: req.args_maximum,
            data,
        }
    }

    /// Parse a response body in the byte order of `drep`. Bytes after ActualCount are ignored.
    pub fn parse(body: &[u8], drep: Drep) -> Result<PnioResponse> {
        let e = drep.endian();
        let status = PnioStatus::from_bytes(&e.read_u32(body, 0)?.to_be_bytes())?;
        let args_len = e.read_u32(body, 4)?;
        let max_count = e.read_u32(body, 8)?;
        let offset = e.read_u32(body, 12)?;
        let actual = e.read_u32(body, 16)?;
        if offset != 0 {
            return Err(Error::Unsupported("NDR array offset other than 0"));
        }
        if actual != args_len {
            return Err(Error::Malformed("NDR ActualCount differs from ArgsLength"));
        }
        let end = usize::try_from(actual)
            .ok()
            .and_then(|a| a.checked_add(PNIO_RESPONSE_NDR_LEN))
            .ok_or(Error::Truncated)?;
        let data = body
            .get(PNIO_RESPONSE_NDR_LEN..end)
            .ok_or(Error::Truncated)?
            .to_vec();
        Ok(PnioResponse {
            status,
            args_maximum: max_count,
            data,
        })
    }
}

/// The response body in the byte order of `drep`.
impl Emit for Ndr<'_, PnioResponse> {
    fn buffer_len(&self) -> usize {
        PNIO_RESPONSE_NDR_LEN + self.body.data.len()
    }

    fn emit(&self, w: &mut Writer) -> Result<()> {
        let (e, b) = (self.drep.endian(), self.body);
        ndr_data_len(&b.data)?;
        e.put_u32(&mut w.buf, b.status.as_u32());
        put_array(w, e, b.args_maximum, &b.data)
    }
}
