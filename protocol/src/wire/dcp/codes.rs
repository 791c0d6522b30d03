//! DCP code numbers: options, suboptions, Set BlockQualifiers, IP BlockInfo, DeviceRole bits
//! and the Signal value.

/// DCP option numbers.
pub mod option {
    pub const IP: u8 = 1;
    pub const DEVICE_PROPERTIES: u8 = 2;
    pub const DHCP: u8 = 3;
    pub const CONTROL: u8 = 5;
    pub const DEVICE_INITIATIVE: u8 = 6;
    pub const ALL_SELECTOR: u8 = 0xFF;
}

/// DCP suboption numbers, per option.
pub mod suboption {
    pub const IP_MAC: u8 = 1;
    pub const IP_PARAMETER: u8 = 2;
    pub const IP_FULL_SUITE: u8 = 3;
    pub const DEVICE_VENDOR: u8 = 1;
    pub const NAME_OF_STATION: u8 = 2;
    pub const DEVICE_ID: u8 = 3;
    pub const DEVICE_ROLE: u8 = 4;
    pub const DEVICE_OPTIONS: u8 = 5;
    pub const ALIAS_NAME: u8 = 6;
    pub const DEVICE_INSTANCE: u8 = 7;
    pub const OEM_DEVICE_ID: u8 = 8;
    pub const CONTROL_START: u8 = 1;
    pub const CONTROL_STOP: u8 = 2;
    pub const CONTROL_SIGNAL: u8 = 3;
    pub const CONTROL_RESPONSE: u8 = 4;
    pub const CONTROL_FACTORY_RESET: u8 = 5;
    pub const CONTROL_RESET_TO_FACTORY: u8 = 6;
    pub const DEVICE_INITIATIVE: u8 = 1;
    pub const ALL: u8 = 0xFF;
}

/// BlockQualifier values of Set requests.
pub mod qualifier {
    /// Use the value temporarily (lost at power cycle).
    pub const TEMPORARY: u16 = 0;
    /// Save the value permanently.
    pub const PERMANENT: u16 = 1;
    /// ResetToFactory modes (Wireshark `pn_dcp_BlockQualifier`; the odd value of each pair
    /// means the same mode).
    pub const RESET_APPLICATION_DATA: u16 = 0x0002;
    pub const RESET_COMMUNICATION_PARAMETER: u16 = 0x0004;
    pub const RESET_ENGINEERING_PARAMETER: u16 = 0x0006;
    pub const RESET_ALL_STORED_DATA: u16 = 0x0008;
    pub const RESET_DEVICE: u16 = 0x0010;
    pub const RESET_AND_RESTORE: u16 = 0x0012;
}

/// BlockInfo values of the IP parameter block in responses (Wireshark
/// `pn_dcp_suboption_ip_block_info`).
pub mod ip_block_info {
    pub const NOT_SET: u16 = 0x0000;
    pub const SET: u16 = 0x0001;
    pub const SET_BY_DHCP: u16 = 0x0002;
    /// Or-ed in when an address conflict was detected.
    pub const CONFLICT: u16 = 0x0080;
}

/// DeviceRoleDetails bits.
pub mod device_role {
    pub const IO_DEVICE: u8 = 0x01;
    pub const IO_CONTROLLER: u8 = 0x02;
    pub const IO_MULTIDEVICE: u8 = 0x04;
    pub const PN_SUPERVISOR: u8 = 0x08;
}

/// SignalValue "flash once" (Control/Signal).
pub const SIGNAL_FLASH_ONCE: u16 = 0x0100;
