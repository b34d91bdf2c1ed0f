//! Every frontend message after startup, decoded frame after frame as
//! pgaccel's connection loop reads them.

#![no_main]

use libfuzzer_sys::fuzz_target;
use pgwire::api::PgWireConnectionState;

fuzz_target!(|data: &[u8]| {
    pgaccel_fuzz::decode_all(PgWireConnectionState::ReadyForQuery, data);
});
