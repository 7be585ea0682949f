//! The one `--device D` rule (cli.rs's documentation), for every command that takes it: D must
//! be a device of the file (device 0 of a file with no device at all: a snapshot with nothing
//! recorded still has its device 0); without `--device`, a command about one device uses the
//! file's default (the longest trace, [`Snapshot::default_device`]) and a report over the file
//! covers every device.

use crate::error::{Error, ErrorKind};
use memviz_snapshot::Snapshot;

/// `wanted` checked against `devices` (the devices of `file`): `Ok(wanted)`, or an
/// [`ErrorKind::UnknownDevice`] error naming the devices there are.
pub(crate) fn resolve_device(
    file: &str,
    devices: &[i64],
    wanted: Option<i64>,
) -> Result<Option<i64>, Error> {
    let Some(d) = wanted else {
        return Ok(None);
    };
    if devices.contains(&d) || (devices.is_empty() && d == 0) {
        return Ok(Some(d));
    }
    let list: Vec<String> = devices.iter().map(i64::to_string).collect();
    Err(Error::new(
        ErrorKind::UnknownDevice,
        format!(
            "{file}: no device {d} (devices: {})",
            if list.is_empty() {
                "none".to_string()
            } else {
                list.join(", ")
            }
        ),
    ))
}

/// The device a command about one device shows: `wanted` ([`resolve_device`]) or the file's
/// default.
pub(crate) fn one_device(file: &str, snap: &Snapshot, wanted: Option<i64>) -> Result<i64, Error> {
    Ok(resolve_device(file, &snap.devices(), wanted)?.unwrap_or_else(|| snap.default_device()))
}

/// The devices a report over the file covers: `Some(wanted)` ([`resolve_device`]), or `None`:
/// every device.
pub(crate) fn report_devices(
    file: &str,
    snap: &Snapshot,
    wanted: Option<i64>,
) -> Result<Option<i64>, Error> {
    resolve_device(file, &snap.devices(), wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_of_the_file_or_device_0_of_a_file_without_devices() {
        assert_eq!(resolve_device("f", &[0, 1], Some(1)), Ok(Some(1)));
        assert_eq!(resolve_device("f", &[0, 1], None), Ok(None));
        assert_eq!(resolve_device("f", &[], Some(0)), Ok(Some(0)));
        let e = resolve_device("f", &[0, 1], Some(7)).expect_err("no device 7");
        assert_eq!(e.kind, ErrorKind::UnknownDevice);
        assert_eq!(e.message, "f: no device 7 (devices: 0, 1)");
        let e = resolve_device("f", &[], Some(3)).expect_err("no device 3");
        assert_eq!(e.message, "f: no device 3 (devices: none)");
    }
}
