//! PostgreSQL's `interval` input syntax, read exactly as PostgreSQL 16's
//! `interval_in` reads it (in every `IntervalStyle` but `sql_standard`, see
//! below).
//!
//! Hand-written because arrow's interval parser, which DataFusion uses for
//! `'…'::interval`, understands `1 day 2 hours` but not the forms PostgreSQL
//! itself prints and clients send back: `1 day 02:03:04`, SQL-standard
//! `1-2 3 4:05:06`, ISO 8601 `P1Y2M3DT4H5M6S`, `@ 1 day ago`; and it spills
//! fractional units differently. An interval accepted here has the months,
//! days and microseconds PostgreSQL would store, and an input PostgreSQL
//! refuses is refused with its message and SQLSTATE.
//!
//! The accepted forms:
//!
//! - **postgres** (and `postgres_verbose`): numbers with units, `1 year 2
//!   mons 3 days`, in any order, each with its own sign, `-1 days +02:03:04`;
//!   every unit spelling PostgreSQL knows (`us`/`usec`/`microsecond(s)`,
//!   `ms`/`msec`/`millisecond(s)`, `s`/`sec`/`second(s)`, `m`/`min`/
//!   `minute(s)`, `h`/`hr`/`hour(s)`, `d`/`day(s)`, `w`/`week(s)`,
//!   `mon`/`month(s)`, `y`/`yr`/`year(s)`, `dec`/`decade(s)`, `c`/`cent`/
//!   `century`/`centuries`, `mil`/`millennium`/`millennia`, with plural and
//!   abbreviated forms), case-insensitive, glued to the number or not
//!   (`1day`); a time of day `hh:mm`, `hh:mm:ss[.frac]` or `mm:ss.frac`, with
//!   a bare number before it counting days (`3 04:05:06`); a bare number
//!   alone counting seconds; a leading `@` (like any other punctuation, it
//!   only separates) and `ago`, which negates everything.
//! - **SQL standard**: `years-months`, `1-2`, optionally followed by days and
//!   a time, `-1-2 +3 -4:05:06`.
//! - **ISO 8601**, "format with designators" `P1Y2M3W4DT5H6M7S` (any field may
//!   be fractional or negative, weeks may be mixed with other units) and the
//!   "alternative format" `P0001-02-03T04:05:06` or `P00010203T040506`.
//!
//! Fractions spill as PostgreSQL spills them: a fraction of a year (decade,
//! century, millennium) becomes whole months, rounded; of a month, days at 30
//! a month and the rest as time; of a week or a day, days and then time at 24
//! hours a day; of a second, microseconds, rounded (PostgreSQL keeps no more).
//!
//! The algorithm is PostgreSQL's own, as `ParseDateTime`, `DecodeInterval` and
//! `DecodeISO8601Interval` implement it in `src/backend/utils/adt/datetime.c`:
//! the input is split into fields, the fields are read right to left so that
//! a unit is known before its number, and an input that does not decode that
//! way is tried as ISO 8601. Its corner cases are kept on purpose, because
//! agreeing with the server is the point: `ago` anywhere negates the whole
//! interval, a unit with no number is ignored (`1 day hour`), a time of day
//! replaces the time gathered to its right (`1:00 1.5 days` is `1 day
//! 01:00:00`), at most 25 fields and 255 characters of them are read. The
//! tests' expectations, and some 550,000 generated inputs, were checked
//! against a running server (15.20, whose interval input is 16's; 17 adds
//! `infinity`, and refuses `ago` before the end and a unit with no number).
//!
//! `IntervalStyle = sql_standard` makes PostgreSQL apply a leading `-` to
//! every field of an input with no other sign (`-1 2:03` means `-1 days
//! -02:03:00`); this parser reads inputs as every other style does.

use datafusion::arrow::datatypes::IntervalMonthDayNano;

/// SQLSTATE `invalid_datetime_format`, of [`InvalidInterval::Syntax`].
pub const INVALID_DATETIME_FORMAT: &str = "22007";
/// SQLSTATE `interval_field_overflow`, of [`InvalidInterval::FieldOutOfRange`].
pub const INTERVAL_FIELD_OVERFLOW: &str = "22015";
/// SQLSTATE `datetime_value_out_of_range`, of [`InvalidInterval::OutOfRange`].
pub const DATETIME_VALUE_OUT_OF_RANGE: &str = "22008";

/// Why a text is not an interval, with PostgreSQL's message (the
/// [`Display`](std::fmt::Display) form) and SQLSTATE ([`Self::sqlstate`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidInterval {
    /// Not an interval at all (SQLSTATE 22007).
    #[error("invalid input syntax for type interval: \"{0}\"")]
    Syntax(String),
    /// A field too large for its part of the interval, or a time of day
    /// field out of its range such as `1:60` (SQLSTATE 22015).
    #[error("interval field value out of range: \"{0}\"")]
    FieldOutOfRange(String),
    /// The fields add up to more months than an interval holds, or (for
    /// [`parse_interval`] only) to more time than nanoseconds in an `i64`
    /// hold, about 106,751 days (SQLSTATE 22008).
    #[error("interval out of range")]
    OutOfRange,
}

impl InvalidInterval {
    /// The SQLSTATE PostgreSQL reports for this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            Self::Syntax(_) => INVALID_DATETIME_FORMAT,
            Self::FieldOutOfRange(_) => INTERVAL_FIELD_OVERFLOW,
            Self::OutOfRange => DATETIME_VALUE_OUT_OF_RANGE,
        }
    }
}

/// An interval as PostgreSQL stores it: months, days and microseconds, each
/// with its own sign.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct PgInterval {
    pub months: i32,
    pub days: i32,
    pub microseconds: i64,
}

impl PgInterval {
    /// The same interval in arrow's representation, or `None` if its time
    /// part is beyond what nanoseconds in an `i64` hold.
    pub fn to_month_day_nano(self) -> Option<IntervalMonthDayNano> {
        let nanoseconds = self.microseconds.checked_mul(1_000)?;
        Some(IntervalMonthDayNano::new(
            self.months,
            self.days,
            nanoseconds,
        ))
    }
}

/// PostgreSQL's interval input syntax, as `interval_in` accepts it, in
/// arrow's representation (nanoseconds are always whole microseconds).
///
/// PostgreSQL's time part reaches about 292,000 years; arrow's about 106,751
/// days, beyond which this answers [`InvalidInterval::OutOfRange`] where
/// PostgreSQL would accept the input. [`parse_pg_interval`] has no such
/// limit.
pub fn parse_interval(text: &str) -> Result<IntervalMonthDayNano, InvalidInterval> {
    parse_pg_interval(text)?
        .to_month_day_nano()
        .ok_or(InvalidInterval::OutOfRange)
}

/// PostgreSQL's interval input syntax, as `interval_in` accepts it, in
/// PostgreSQL's own representation.
pub fn parse_pg_interval(text: &str) -> Result<PgInterval, InvalidInterval> {
    let decoded = match split_fields(text).and_then(|fields| decode_fields(&fields)) {
        // Like PostgreSQL, anything that is not in its own syntax gets a
        // second chance as ISO 8601, whose error is then the one reported.
        Err(Fault::BadFormat) => decode_iso8601(text),
        decoded => decoded,
    };
    match decoded {
        Ok(parts) => parts.finish().ok_or(InvalidInterval::OutOfRange),
        Err(Fault::BadFormat) => Err(InvalidInterval::Syntax(text.to_owned())),
        Err(Fault::FieldOverflow) => Err(InvalidInterval::FieldOutOfRange(text.to_owned())),
    }
}

/// PostgreSQL's two failures while decoding (`DTERR_BAD_FORMAT` and
/// `DTERR_FIELD_OVERFLOW`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    BadFormat,
    FieldOverflow,
}

type Decoded<T> = Result<T, Fault>;

const USECS_PER_SEC: i64 = 1_000_000;
const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;
const DAYS_PER_MONTH: i32 = 30;
const MONTHS_PER_YEAR: i32 = 12;

/// The fields PostgreSQL reads at most (`MAXDATEFIELDS`).
const MAX_FIELDS: usize = 25;
/// The bytes of PostgreSQL's work buffer for the fields, each of which takes
/// its characters and a terminating NUL.
const WORK_BUFFER: usize = 256;
/// Keywords are compared on their first 10 characters only (`TOKMAXLEN`):
/// `microseconds` is found as `microsecon`.
const TOKEN_MAX_LEN: usize = 10;

/// The interval being gathered, by unit (PostgreSQL's `pg_itm_in`): years
/// and months are only combined at the end.
#[derive(Debug, Clone, Copy, Default)]
struct Parts {
    years: i32,
    months: i32,
    days: i32,
    micros: i64,
}

impl Parts {
    fn finish(self) -> Option<PgInterval> {
        let months = i64::from(self.years) * i64::from(MONTHS_PER_YEAR) + i64::from(self.months);
        Some(PgInterval {
            months: i32::try_from(months).ok()?,
            days: self.days,
            microseconds: self.micros,
        })
    }

    /// Adds `val * scale` years.
    fn add_years(&mut self, val: i64, scale: i32) -> Decoded<()> {
        let years = i32::try_from(val)
            .ok()
            .and_then(|val| val.checked_mul(scale))
            .ok_or(Fault::FieldOverflow)?;
        self.years = checked(self.years.checked_add(years))?;
        Ok(())
    }

    /// Adds `frac * scale` years, as whole months, rounded.
    fn add_fract_years(&mut self, frac: f64, scale: i32) -> Decoded<()> {
        let months =
            (frac * f64::from(scale) * f64::from(MONTHS_PER_YEAR)).round_ties_even() as i32;
        self.months = checked(self.months.checked_add(months))?;
        Ok(())
    }

    fn add_months(&mut self, val: i64) -> Decoded<()> {
        let months = checked(i32::try_from(val).ok())?;
        self.months = checked(self.months.checked_add(months))?;
        Ok(())
    }

    /// Adds `val * scale` days.
    fn add_days(&mut self, val: i64, scale: i32) -> Decoded<()> {
        let days = i32::try_from(val)
            .ok()
            .and_then(|val| val.checked_mul(scale))
            .ok_or(Fault::FieldOverflow)?;
        self.days = checked(self.days.checked_add(days))?;
        Ok(())
    }

    /// Adds `frac * scale` days: the whole days as days, the rest as time.
    fn add_fract_days(&mut self, frac: f64, scale: i32) -> Decoded<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let frac = frac * f64::from(scale);
        let days = frac as i32;
        self.days = checked(self.days.checked_add(days))?;
        self.add_fract_micros(frac - f64::from(days), USECS_PER_DAY)
    }

    /// Adds `(val + frac) * scale` microseconds.
    fn add_micros(&mut self, val: i64, frac: f64, scale: i64) -> Decoded<()> {
        let micros = val
            .checked_mul(scale)
            .and_then(|m| self.micros.checked_add(m));
        self.micros = checked(micros)?;
        self.add_fract_micros(frac, scale)
    }

    /// Adds `frac * scale` microseconds, rounded (a half is rounded towards
    /// zero, as PostgreSQL does).
    fn add_fract_micros(&mut self, frac: f64, scale: i64) -> Decoded<()> {
        if frac == 0.0 {
            return Ok(());
        }
        let frac = frac * scale as f64;
        let mut micros = frac as i64;
        let rest = frac - micros as f64;
        if rest > 0.5 {
            micros += 1;
        } else if rest < -0.5 {
            micros -= 1;
        }
        self.micros = checked(self.micros.checked_add(micros))?;
        Ok(())
    }

    /// `ago`: everything negated.
    fn negate(&mut self) -> Decoded<()> {
        self.micros = checked(self.micros.checked_neg())?;
        self.days = checked(self.days.checked_neg())?;
        self.months = checked(self.months.checked_neg())?;
        self.years = checked(self.years.checked_neg())?;
        Ok(())
    }
}

/// An arithmetic result, or the field overflow its failure is.
fn checked<T>(value: Option<T>) -> Decoded<T> {
    value.ok_or(Fault::FieldOverflow)
}

/// What a field looks like (PostgreSQL's `DTK_*` field types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Digits, possibly with a decimal point: `12`, `1.5`, `.5`.
    Number,
    /// Digits or letters run together with `-`, `/` or `.`: `1-2`, `1.`,
    /// `p1y2m`.
    Date,
    /// Digits with a colon: `04:05:06.7`.
    Time,
    /// A sign and digits, with any `:`, `.` or `-`: `-1`, `+02:03`, `-1-2`
    /// (PostgreSQL calls these time zones, which is what they are in a
    /// timestamp).
    Signed,
    /// Letters: `days`, `ago`.
    Word,
    /// A sign and letters: `-infinity`.
    SignedWord,
}

#[derive(Debug)]
struct Field {
    kind: Kind,
    /// The field's text, letters in lower case.
    text: String,
}

/// PostgreSQL's `ParseDateTime`: the input split into fields at white space
/// and punctuation, or where a number meets a word.
fn split_fields(text: &str) -> Decoded<Vec<Field>> {
    let bytes = text.as_bytes();
    let mut fields: Vec<Field> = Vec::new();
    let mut buffer = WorkBuffer::default();
    let mut at = 0;
    while let Some(&first) = bytes.get(at) {
        if is_space(first) {
            at += 1;
            continue;
        }
        if fields.len() >= MAX_FIELDS {
            return Err(Fault::BadFormat);
        }
        let mut field = String::new();
        let is = |at: usize, test: fn(u8) -> bool| bytes.get(at).is_some_and(|&b| test(b));
        let kind = if first.is_ascii_digit() {
            while is(at, |b| b.is_ascii_digit()) {
                buffer.push(&mut field, bytes[at])?;
                at += 1;
            }
            match bytes.get(at) {
                Some(b':') => {
                    while is(at, |b| b.is_ascii_digit() || b == b':' || b == b'.') {
                        buffer.push(&mut field, bytes[at])?;
                        at += 1;
                    }
                    Kind::Time
                }
                Some(&delimiter @ (b'-' | b'/' | b'.')) => {
                    buffer.push(&mut field, delimiter)?;
                    at += 1;
                    if is(at, |b| b.is_ascii_digit()) {
                        while is(at, |b| b.is_ascii_digit()) {
                            buffer.push(&mut field, bytes[at])?;
                            at += 1;
                        }
                        // `1.5` is a number, `1.5.6` and `1-2` are dates.
                        if bytes.get(at) == Some(&delimiter) {
                            while bytes
                                .get(at)
                                .is_some_and(|&b| b.is_ascii_digit() || b == delimiter)
                            {
                                buffer.push(&mut field, bytes[at])?;
                                at += 1;
                            }
                            Kind::Date
                        } else if delimiter == b'.' {
                            Kind::Number
                        } else {
                            Kind::Date
                        }
                    } else {
                        while bytes
                            .get(at)
                            .is_some_and(|&b| b.is_ascii_alphanumeric() || b == delimiter)
                        {
                            buffer.push(&mut field, bytes[at].to_ascii_lowercase())?;
                            at += 1;
                        }
                        Kind::Date
                    }
                }
                _ => Kind::Number,
            }
        } else if first == b'.' {
            buffer.push(&mut field, first)?;
            at += 1;
            while is(at, |b| b.is_ascii_digit()) {
                buffer.push(&mut field, bytes[at])?;
                at += 1;
            }
            Kind::Number
        } else if first.is_ascii_alphabetic() {
            while is(at, |b| b.is_ascii_alphabetic()) {
                buffer.push(&mut field, bytes[at].to_ascii_lowercase())?;
                at += 1;
            }
            // A word glued to what follows is one date-like field (a time
            // zone name, say), unless it is a date/time keyword before a
            // number: `d1` is two fields, `day1` one.
            let glued = match bytes.get(at) {
                Some(b'-' | b'/' | b'.') => true,
                Some(&b) if b == b'+' || b.is_ascii_digit() => !is_datetime_keyword(&field),
                _ => false,
            };
            if glued {
                loop {
                    buffer.push(&mut field, bytes[at].to_ascii_lowercase())?;
                    at += 1;
                    if !is(at, |b| b.is_ascii_alphanumeric() || b"+-/_.:".contains(&b)) {
                        break;
                    }
                }
                Kind::Date
            } else {
                Kind::Word
            }
        } else if first == b'+' || first == b'-' {
            buffer.push(&mut field, first)?;
            at += 1;
            while is(at, is_space) {
                at += 1;
            }
            if is(at, |b| b.is_ascii_digit()) {
                while is(at, |b| b.is_ascii_digit() || b":.-".contains(&b)) {
                    buffer.push(&mut field, bytes[at])?;
                    at += 1;
                }
                Kind::Signed
            } else if is(at, |b| b.is_ascii_alphabetic()) {
                while is(at, |b| b.is_ascii_alphabetic()) {
                    buffer.push(&mut field, bytes[at].to_ascii_lowercase())?;
                    at += 1;
                }
                Kind::SignedWord
            } else {
                return Err(Fault::BadFormat);
            }
        } else if first.is_ascii_punctuation() {
            // `@`, `,` and the like only separate fields.
            at += 1;
            continue;
        } else {
            return Err(Fault::BadFormat);
        };
        buffer.terminate();
        fields.push(Field { kind, text: field });
    }
    Ok(fields)
}

/// C's `isspace`.
fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\x0b' | b'\x0c' | b'\r')
}

/// Accounts for PostgreSQL's fixed work buffer, whose overflow makes the
/// input a syntax error.
#[derive(Default)]
struct WorkBuffer {
    used: usize,
}

impl WorkBuffer {
    fn push(&mut self, field: &mut String, b: u8) -> Decoded<()> {
        if self.used + 1 >= WORK_BUFFER {
            return Err(Fault::BadFormat);
        }
        self.used += 1;
        field.push(char::from(b));
        Ok(())
    }

    /// The NUL that ends a field.
    fn terminate(&mut self) {
        self.used += 1;
    }
}

/// Whether a word is in PostgreSQL's table of date/time keywords
/// (`datetktbl`), which decides whether it stays a word before a number.
fn is_datetime_keyword(word: &str) -> bool {
    const KEYWORDS: &[&str] = &[
        "ad",
        "allballs",
        "am",
        "apr",
        "april",
        "at",
        "aug",
        "august",
        "bc",
        "d",
        "dec",
        "december",
        "dow",
        "doy",
        "dst",
        "epoch",
        "feb",
        "february",
        "fri",
        "friday",
        "h",
        "infinity",
        "isodow",
        "isoyear",
        "j",
        "jan",
        "january",
        "jd",
        "jul",
        "julian",
        "july",
        "jun",
        "june",
        "m",
        "mar",
        "march",
        "may",
        "mm",
        "mon",
        "monday",
        "nov",
        "november",
        "now",
        "oct",
        "october",
        "on",
        "pm",
        "s",
        "sat",
        "saturday",
        "sep",
        "sept",
        "september",
        "sun",
        "sunday",
        "t",
        "thu",
        "thur",
        "thurs",
        "thursday",
        "today",
        "tomorrow",
        "tue",
        "tues",
        "tuesday",
        "wed",
        "wednesday",
        "weds",
        "y",
        "yesterday",
    ];
    KEYWORDS.contains(&truncated(word))
}

/// A keyword as PostgreSQL compares it: its first [`TOKEN_MAX_LEN`] bytes.
fn truncated(word: &str) -> &str {
    word.get(..TOKEN_MAX_LEN).unwrap_or(word)
}

/// The units an interval word may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    /// Known to PostgreSQL, but refused with a number.
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    /// Known to PostgreSQL (`timezone`, for `EXTRACT`), but refused with a
    /// number.
    TimeZone,
}

impl Unit {
    /// The unit's bit in the set of units already given; giving one twice
    /// is an error.
    fn mask(self) -> u16 {
        1 << self as u16
    }
}

/// The seconds with any fraction, which `1.5 seconds` gives all of.
const ALL_SECONDS: u16 =
    (1 << Unit::Second as u16) | (1 << Unit::Millisecond as u16) | (1 << Unit::Microsecond as u16);
/// What a time of day gives.
const TIME_OF_DAY: u16 = ALL_SECONDS | (1 << Unit::Minute as u16) | (1 << Unit::Hour as u16);

/// An interval word (PostgreSQL's `deltatktbl`).
enum Keyword {
    Unit(Unit),
    Ago,
}

fn interval_keyword(word: &str) -> Option<Keyword> {
    use Unit::*;
    let unit = match truncated(word) {
        "ago" => return Some(Keyword::Ago),
        "us" | "usec" | "usecs" | "usecond" | "useconds" | "microsecon" => Microsecond,
        "ms" | "msec" | "msecs" | "msecond" | "mseconds" | "millisecon" => Millisecond,
        "s" | "sec" | "secs" | "second" | "seconds" => Second,
        "m" | "min" | "mins" | "minute" | "minutes" => Minute,
        "h" | "hr" | "hrs" | "hour" | "hours" => Hour,
        "d" | "day" | "days" => Day,
        "w" | "week" | "weeks" => Week,
        "mon" | "mons" | "month" | "months" => Month,
        "qtr" | "quarter" => Quarter,
        "y" | "yr" | "yrs" | "year" | "years" => Year,
        "dec" | "decs" | "decade" | "decades" => Decade,
        "c" | "cent" | "century" | "centuries" => Century,
        "mil" | "mils" | "millennium" | "millennia" => Millennium,
        "timezone" => TimeZone,
        _ => return None,
    };
    Some(Keyword::Unit(unit))
}

/// What the next number to the left counts, fields being read right to left.
#[derive(Debug, Clone, Copy)]
enum Counts {
    /// Nothing said yet: seconds.
    Unsaid,
    Unit(Unit),
    /// Right after `ago`: a number there is an error.
    Nothing,
}

/// PostgreSQL's `DecodeInterval` over the fields of a postgres-style or
/// SQL-standard interval.
fn decode_fields(fields: &[Field]) -> Decoded<Parts> {
    let mut parts = Parts::default();
    let mut counts = Counts::Unsaid;
    let mut given: u16 = 0;
    let mut ago = false;
    for field in fields.iter().rev() {
        let text = field.text.as_str();
        // A signed field with a colon is a signed time of day if it reads as
        // one, and is otherwise read as a number (and refused).
        let signed_time = match field.kind {
            Kind::Signed if text[1..].contains(':') => decode_time(&text[1..]).ok(),
            _ => None,
        };
        let mask = match (field.kind, signed_time) {
            (Kind::Time, _) => {
                // Replaces, rather than adds to, the time so far.
                parts.micros = decode_time(text)?;
                counts = Counts::Unit(Unit::Day);
                TIME_OF_DAY
            }
            (Kind::Signed, Some(micros)) => {
                parts.micros = if text.starts_with('-') {
                    checked(micros.checked_neg())?
                } else {
                    micros
                };
                counts = Counts::Unit(Unit::Day);
                TIME_OF_DAY
            }
            (Kind::Signed | Kind::Date | Kind::Number, _) => {
                let number = decode_number(text)?;
                let unit = if number.years_months {
                    Unit::Month
                } else {
                    match counts {
                        Counts::Unsaid => Unit::Second,
                        Counts::Unit(unit) => unit,
                        Counts::Nothing => return Err(Fault::BadFormat),
                    }
                };
                counts = Counts::Unit(unit);
                let (val, frac) = (number.whole, number.frac);
                match unit {
                    Unit::Microsecond => parts.add_micros(val, frac, 1)?,
                    Unit::Millisecond => parts.add_micros(val, frac, 1_000)?,
                    Unit::Second => parts.add_micros(val, frac, USECS_PER_SEC)?,
                    Unit::Minute => parts.add_micros(val, frac, USECS_PER_MINUTE)?,
                    Unit::Hour => {
                        parts.add_micros(val, frac, USECS_PER_HOUR)?;
                        // `1 2 hours`: the number before hours counts days.
                        counts = Counts::Unit(Unit::Day);
                    }
                    Unit::Day => {
                        parts.add_days(val, 1)?;
                        parts.add_fract_micros(frac, USECS_PER_DAY)?;
                    }
                    Unit::Week => {
                        parts.add_days(val, 7)?;
                        parts.add_fract_days(frac, 7)?;
                    }
                    Unit::Month => {
                        parts.add_months(val)?;
                        parts.add_fract_days(frac, DAYS_PER_MONTH)?;
                    }
                    Unit::Year => {
                        parts.add_years(val, 1)?;
                        parts.add_fract_years(frac, 1)?;
                    }
                    Unit::Decade => {
                        parts.add_years(val, 10)?;
                        parts.add_fract_years(frac, 10)?;
                    }
                    Unit::Century => {
                        parts.add_years(val, 100)?;
                        parts.add_fract_years(frac, 100)?;
                    }
                    Unit::Millennium => {
                        parts.add_years(val, 1_000)?;
                        parts.add_fract_years(frac, 1_000)?;
                    }
                    Unit::Quarter | Unit::TimeZone => return Err(Fault::BadFormat),
                }
                if unit == Unit::Second && frac != 0.0 {
                    ALL_SECONDS
                } else {
                    unit.mask()
                }
            }
            (Kind::Word | Kind::SignedWord, _) => {
                match interval_keyword(text).ok_or(Fault::BadFormat)? {
                    Keyword::Unit(unit) => counts = Counts::Unit(unit),
                    Keyword::Ago => {
                        ago = true;
                        counts = Counts::Nothing;
                    }
                }
                0
            }
        };
        if mask & given != 0 {
            return Err(Fault::BadFormat);
        }
        given |= mask;
    }
    if given == 0 {
        return Err(Fault::BadFormat);
    }
    if ago {
        parts.negate()?;
    }
    Ok(parts)
}

/// A number field: its whole part, its fraction (of the same sign), and
/// whether it was `years-months`, which it then gives in months.
struct Number {
    whole: i64,
    frac: f64,
    years_months: bool,
}

fn decode_number(text: &str) -> Decoded<Number> {
    let (whole, rest) = strtol(text);
    let whole = checked(whole)?;
    let negative = text.starts_with('-');
    if let Some(rest) = rest.strip_prefix('-') {
        // SQL standard `years-months`.
        let (months, tail) = strtol(rest);
        let months = months
            .and_then(|m| i32::try_from(m).ok())
            .filter(|m| (0..MONTHS_PER_YEAR).contains(m))
            .ok_or(Fault::FieldOverflow)?;
        if !tail.is_empty() {
            return Err(Fault::BadFormat);
        }
        let months = if negative { -months } else { months };
        let whole = whole
            .checked_mul(i64::from(MONTHS_PER_YEAR))
            .and_then(|m| m.checked_add(i64::from(months)));
        return Ok(Number {
            whole: checked(whole)?,
            frac: 0.0,
            years_months: true,
        });
    }
    let frac = if rest.starts_with('.') {
        let frac = parse_fraction(rest)?;
        if negative { -frac } else { frac }
    } else if rest.is_empty() {
        0.0
    } else {
        return Err(Fault::BadFormat);
    };
    Ok(Number {
        whole,
        frac,
        years_months: false,
    })
}

/// PostgreSQL's `DecodeTimeCommon` for an interval: `h:m`, `h:m:s[.f]`
/// or `m:s.f`, in microseconds.
fn decode_time(text: &str) -> Decoded<i64> {
    let (hours, rest) = strtol(text);
    let mut hours = checked(hours)?;
    let rest = rest.strip_prefix(':').ok_or(Fault::BadFormat)?;
    let (minutes, rest) = strtol(rest);
    let mut minutes = int32(minutes)?;
    let mut seconds = 0;
    let mut micros = 0;
    if rest.starts_with('.') {
        // `mm:ss.fff`
        micros = fractional_second(rest)?;
        seconds = minutes;
        minutes = checked(i32::try_from(hours).ok())?;
        hours = 0;
    } else if let Some(rest) = rest.strip_prefix(':') {
        let (secs, rest) = strtol(rest);
        seconds = int32(secs)?;
        if rest.starts_with('.') {
            micros = fractional_second(rest)?;
        } else if !rest.is_empty() {
            return Err(Fault::BadFormat);
        }
    } else if !rest.is_empty() {
        return Err(Fault::BadFormat);
    }
    if hours < 0
        || !(0..60).contains(&minutes)
        || !(0..=60).contains(&seconds)
        || !(0..=USECS_PER_SEC).contains(&micros)
    {
        return Err(Fault::FieldOverflow);
    }
    let total = hours
        .checked_mul(USECS_PER_HOUR)
        .and_then(|t| t.checked_add(micros))
        .and_then(|t| t.checked_add(i64::from(minutes) * USECS_PER_MINUTE))
        .and_then(|t| t.checked_add(i64::from(seconds) * USECS_PER_SEC));
    checked(total)
}

/// A value of C's `strtoint`: out of `i32` is an overflow.
fn int32(value: Option<i64>) -> Decoded<i32> {
    checked(value.and_then(|v| i32::try_from(v).ok()))
}

/// C's `strtol` in base 10 on a field (which has no white space): an
/// optional sign and digits, and the rest of the text. The value is 0 and the
/// rest the whole text if there are no digits, `None` if it overflows.
fn strtol(text: &str) -> (Option<i64>, &str) {
    let bytes = text.as_bytes();
    let sign = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
    let digits = bytes[sign..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if digits == 0 {
        return (Some(0), text);
    }
    let end = sign + digits;
    (text[..end].parse().ok(), &text[end..])
}

/// PostgreSQL's `ParseFraction`: a `.` and digits up to the end of the
/// field (a lone `.` is zero).
fn parse_fraction(text: &str) -> Decoded<f64> {
    if text == "." {
        return Ok(0.0);
    }
    match strtod(text.as_bytes()) {
        Some(Strtod {
            value,
            len,
            out_of_range: false,
        }) if len == text.len() => Ok(value),
        _ => Err(Fault::BadFormat),
    }
}

/// A fraction of a second in microseconds, rounded half to even.
fn fractional_second(text: &str) -> Decoded<i64> {
    Ok((parse_fraction(text)? * 1e6).round_ties_even() as i64)
}

/// What C's `strtod` makes of the start of a text.
struct Strtod {
    value: f64,
    /// The bytes read.
    len: usize,
    /// Whether `strtod` would set `errno` to `ERANGE`: the number overflows,
    /// or underflows to a subnormal or zero.
    out_of_range: bool,
}

/// C's `strtod` (glibc's, in the C locale) at the start of `bytes`, which
/// has no leading white space: a decimal number with an optional exponent,
/// `inf`, `infinity`, `nan`, `nan(…)`, or a hexadecimal `0x…p…`. `None`
/// if nothing there is a number.
fn strtod(bytes: &[u8]) -> Option<Strtod> {
    let sign = usize::from(matches!(bytes.first(), Some(b'+' | b'-')));
    let negative = bytes.first() == Some(&b'-');
    let body = &bytes[sign..];
    let starts = |word: &str| {
        body.len() >= word.len() && body[..word.len()].eq_ignore_ascii_case(word.as_bytes())
    };
    let signed = |value: f64| if negative { -value } else { value };
    let special = |value: f64, len: usize| Strtod {
        value: signed(value),
        len: sign + len,
        out_of_range: false,
    };
    if starts("infinity") {
        return Some(special(f64::INFINITY, 8));
    }
    if starts("inf") {
        return Some(special(f64::INFINITY, 3));
    }
    if starts("nan") {
        let mut len = 3;
        if body.get(3) == Some(&b'(') {
            let inner = body[4..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            if body.get(4 + inner) == Some(&b')') {
                len = 5 + inner;
            }
        }
        return Some(special(f64::NAN, len));
    }
    if starts("0x")
        && let Some(hex) = hexadecimal(&body[2..])
    {
        return Some(Strtod {
            value: signed(hex.magnitude),
            len: sign + 2 + hex.len,
            out_of_range: hex.magnitude.is_infinite()
                || (!hex.exact && hex.magnitude < f64::MIN_POSITIVE),
        });
    }
    let digits = |from: usize| {
        body[from..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let whole = digits(0);
    let mut len = whole;
    let mut fraction = 0;
    if body.get(len) == Some(&b'.') {
        fraction = digits(len + 1);
        len += 1 + fraction;
    }
    if whole + fraction == 0 {
        return None;
    }
    if matches!(body.get(len), Some(b'e' | b'E')) {
        let exponent_sign = usize::from(matches!(body.get(len + 1), Some(b'+' | b'-')));
        let exponent = digits(len + 1 + exponent_sign);
        if exponent > 0 {
            len += 1 + exponent_sign + exponent;
        }
    }
    let magnitude: f64 = std::str::from_utf8(&body[..len]).ok()?.parse().ok()?;
    let nonzero = body[..whole + usize::from(fraction > 0) + fraction]
        .iter()
        .any(|b| (b'1'..=b'9').contains(b));
    Some(Strtod {
        value: signed(magnitude),
        len: sign + len,
        out_of_range: magnitude.is_infinite() || (nonzero && magnitude < f64::MIN_POSITIVE),
    })
}

/// A hexadecimal floating-point number.
struct Hexadecimal {
    magnitude: f64,
    /// The bytes read.
    len: usize,
    /// Whether `magnitude` is the number's exact value.
    exact: bool,
}

/// The hexadecimal digits (and binary exponent) after `0x`, or `None` if no
/// digit follows (then only the `0` is a number). Digits beyond the first 15
/// significant ones only make the result inexact.
fn hexadecimal(bytes: &[u8]) -> Option<Hexadecimal> {
    let mut mantissa: u64 = 0;
    let mut dropped = false;
    let mut exponent: i64 = 0;
    let mut significant = 0;
    let mut any = false;
    let mut at = 0;
    let mut point = false;
    while let Some(&b) = bytes.get(at) {
        if b == b'.' && !point {
            point = true;
        } else if let Some(digit) = char::from(b).to_digit(16) {
            any = true;
            if mantissa != 0 || digit != 0 {
                significant += 1;
            }
            if significant <= 15 {
                mantissa = mantissa * 16 + u64::from(digit);
                if point {
                    exponent -= 4;
                }
            } else {
                dropped |= digit != 0;
                if !point {
                    exponent += 4;
                }
            }
        } else {
            break;
        }
        at += 1;
    }
    if !any {
        return None;
    }
    if matches!(bytes.get(at), Some(b'p' | b'P')) {
        let sign = usize::from(matches!(bytes.get(at + 1), Some(b'+' | b'-')));
        let digits = bytes[at + 1 + sign..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits > 0 {
            let text = std::str::from_utf8(&bytes[at + 1..at + 1 + sign + digits]).ok()?;
            let power = text
                .parse::<i64>()
                .unwrap_or(if sign == 1 && bytes[at + 1] == b'-' {
                    i64::MIN / 2
                } else {
                    i64::MAX / 2
                });
            exponent = exponent.saturating_add(power);
            at += 1 + sign + digits;
        }
    }
    let exponent = i32::try_from(exponent.clamp(-2_000, 2_000)).unwrap_or_default();
    // Scaled in two steps so that a subnormal result is not flushed early.
    let half = exponent / 2;
    let magnitude = mantissa as f64 * 2f64.powi(half) * 2f64.powi(exponent - half);
    let back = magnitude * 2f64.powi(-half) * 2f64.powi(half - exponent);
    Some(Hexadecimal {
        magnitude,
        len: at,
        exact: !dropped && (mantissa as f64) as u64 == mantissa && back == mantissa as f64,
    })
}

/// PostgreSQL's `ParseISO8601Number`: a number (as `strtod` reads it) at
/// `at`, split into its whole part and its fraction, and where it ends.
fn iso8601_number(bytes: &[u8], at: usize) -> Decoded<(i64, f64, usize)> {
    let rest = &bytes[at.min(bytes.len())..];
    if !rest
        .first()
        .is_some_and(|&b| b.is_ascii_digit() || b == b'-' || b == b'.')
    {
        return Err(Fault::BadFormat);
    }
    let number = strtod(rest).ok_or(Fault::BadFormat)?;
    if number.out_of_range {
        return Err(Fault::BadFormat);
    }
    let value = number.value;
    if value.is_nan() || !(-1.0e15..=1.0e15).contains(&value) {
        return Err(Fault::FieldOverflow);
    }
    let whole = value.trunc() as i64;
    Ok((whole, value - whole as f64, at + number.len))
}

/// The digits of a number's whole part, after any `-`.
fn integer_width(bytes: &[u8]) -> usize {
    let digits = bytes.strip_prefix(b"-").unwrap_or(bytes);
    digits.iter().take_while(|b| b.is_ascii_digit()).count()
}

/// PostgreSQL's `DecodeISO8601Interval`: `P…` with designators, or the
/// alternative format, on the text as given (case and white space matter).
fn decode_iso8601(text: &str) -> Decoded<Parts> {
    let bytes = text.as_bytes();
    if bytes.len() < 2 || bytes[0] != b'P' {
        return Err(Fault::BadFormat);
    }
    let mut parts = Parts::default();
    let mut date_part = true;
    let mut have_field = false;
    let mut at = 1;
    while let Some(&b) = bytes.get(at) {
        if b == b'T' {
            date_part = false;
            have_field = false;
            at += 1;
            continue;
        }
        let start = at;
        let (val, frac, end) = iso8601_number(bytes, at)?;
        let unit = bytes.get(end).copied();
        at = end + 1;
        if date_part {
            match unit {
                Some(b'Y') => {
                    parts.add_years(val, 1)?;
                    parts.add_fract_years(frac, 1)?;
                }
                Some(b'M') => {
                    parts.add_months(val)?;
                    parts.add_fract_days(frac, DAYS_PER_MONTH)?;
                }
                Some(b'W') => {
                    parts.add_days(val, 7)?;
                    parts.add_fract_days(frac, 7)?;
                }
                Some(b'D') => {
                    parts.add_days(val, 1)?;
                    parts.add_fract_micros(frac, USECS_PER_DAY)?;
                }
                // Alternative format, basic: `P00010203T…`.
                Some(b'T') | None if integer_width(&bytes[start..]) == 8 && !have_field => {
                    parts.add_years(val / 10_000, 1)?;
                    parts.add_months(val / 100 % 100)?;
                    parts.add_days(val % 100, 1)?;
                    parts.add_fract_micros(frac, USECS_PER_DAY)?;
                    if unit.is_none() {
                        return Ok(parts);
                    }
                    date_part = false;
                    have_field = false;
                    continue;
                }
                // Alternative format, extended: `P0001-02-03T…`.
                Some(b'T' | b'-') | None => {
                    if have_field {
                        return Err(Fault::BadFormat);
                    }
                    parts.add_years(val, 1)?;
                    parts.add_fract_years(frac, 1)?;
                    match unit {
                        None => return Ok(parts),
                        Some(b'T') => {
                            date_part = false;
                            have_field = false;
                            continue;
                        }
                        _ => {}
                    }
                    let (val, frac, end) = iso8601_number(bytes, at)?;
                    parts.add_months(val)?;
                    parts.add_fract_days(frac, DAYS_PER_MONTH)?;
                    at = end;
                    match bytes.get(at) {
                        None => return Ok(parts),
                        Some(b'T') => {
                            date_part = false;
                            have_field = false;
                            continue;
                        }
                        Some(b'-') => at += 1,
                        Some(_) => return Err(Fault::BadFormat),
                    }
                    let (val, frac, end) = iso8601_number(bytes, at)?;
                    parts.add_days(val, 1)?;
                    parts.add_fract_micros(frac, USECS_PER_DAY)?;
                    at = end;
                    match bytes.get(at) {
                        None => return Ok(parts),
                        Some(b'T') => {
                            date_part = false;
                            have_field = false;
                            continue;
                        }
                        Some(_) => return Err(Fault::BadFormat),
                    }
                }
                Some(_) => return Err(Fault::BadFormat),
            }
        } else {
            match unit {
                Some(b'H') => parts.add_micros(val, frac, USECS_PER_HOUR)?,
                Some(b'M') => parts.add_micros(val, frac, USECS_PER_MINUTE)?,
                Some(b'S') => parts.add_micros(val, frac, USECS_PER_SEC)?,
                // Alternative format, basic: `…T040506`. PostgreSQL reads a
                // fraction here as one of a microsecond.
                None if integer_width(&bytes[start..]) == 6 && !have_field => {
                    parts.add_micros(val / 10_000, 0.0, USECS_PER_HOUR)?;
                    parts.add_micros(val / 100 % 100, 0.0, USECS_PER_MINUTE)?;
                    parts.add_micros(val % 100, 0.0, USECS_PER_SEC)?;
                    parts.add_fract_micros(frac, 1)?;
                    return Ok(parts);
                }
                // Alternative format, extended: `…T04:05:06`.
                Some(b':') | None => {
                    if have_field {
                        return Err(Fault::BadFormat);
                    }
                    parts.add_micros(val, frac, USECS_PER_HOUR)?;
                    if unit.is_none() {
                        return Ok(parts);
                    }
                    let (val, frac, end) = iso8601_number(bytes, at)?;
                    parts.add_micros(val, frac, USECS_PER_MINUTE)?;
                    at = end;
                    match bytes.get(at) {
                        None => return Ok(parts),
                        Some(b':') => at += 1,
                        Some(_) => return Err(Fault::BadFormat),
                    }
                    let (val, frac, end) = iso8601_number(bytes, at)?;
                    parts.add_micros(val, frac, USECS_PER_SEC)?;
                    return if end == bytes.len() {
                        Ok(parts)
                    } else {
                        Err(Fault::BadFormat)
                    };
                }
                Some(_) => return Err(Fault::BadFormat),
            }
        }
        have_field = true;
    }
    Ok(parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An input, and what PostgreSQL made of it: `(months, days,
    /// microseconds)` or the SQLSTATE of its error. Every expectation is the
    /// answer of a real server to `SELECT '<input>'::interval`.
    type Case = (&'static str, Result<(i32, i32, i64), &'static str>);

    /// The postgres and postgres_verbose formats: numbers with units, times of day, signs, `@` and `ago`.
    const POSTGRES_FORMAT: &[Case] = &[
        ("1 day 02:03:04", Ok((0, 1, 7384000000))),
        ("1 day 2:03:04.5", Ok((0, 1, 7384500000))),
        ("-1 days +02:03:04", Ok((0, -1, 7384000000))),
        ("1 year 2 mons 3 days", Ok((14, 3, 0))),
        ("3 days 04:05:06.789", Ok((0, 3, 14706789000))),
        ("02:03:04", Ok((0, 0, 7384000000))),
        ("-02:03", Ok((0, 0, -7380000000))),
        ("1:2", Ok((0, 0, 3720000000))),
        ("04:05:06.123456789", Ok((0, 0, 14706123457))),
        ("00:00:00.0000005", Ok((0, 0, 0))),
        ("00:00:00.0000015", Ok((0, 0, 2))),
        ("1:", Ok((0, 0, 3600000000))),
        ("1:.5", Ok((0, 0, 60500000))),
        ("59:59.5", Ok((0, 0, 3599500000))),
        ("1:00:60", Ok((0, 0, 3660000000))),
        ("100:00:00", Ok((0, 0, 360000000000))),
        ("1 Day 2 HOURS", Ok((0, 1, 7200000000))),
        ("1DAY", Ok((0, 1, 0))),
        ("1day2hours", Err("22007")),
        ("5", Ok((0, 0, 5000000))),
        ("1 day 5", Ok((0, 1, 5000000))),
        ("1 hour 2", Ok((0, 0, 3602000000))),
        ("1 2:03:04", Ok((0, 1, 7384000000))),
        ("@ 1 day 2 hours ago", Ok((0, -1, -7200000000))),
        ("@ 1 year 2 mons ago", Ok((-14, 0, 0))),
        ("1 day ago", Ok((0, -1, 0))),
        ("1 day, 2 hours", Ok((0, 1, 7200000000))),
        ("  1 day  ", Ok((0, 1, 0))),
        ("+1 day -2 hours", Ok((0, 1, -7200000000))),
        ("- 1 day", Ok((0, -1, 0))),
        ("1 day -02:03:04", Ok((0, 1, -7384000000))),
        ("0", Ok((0, 0, 0))),
        ("00:00", Ok((0, 0, 0))),
    ];

    /// Every unit, in each of its spellings.
    const UNITS: &[Case] = &[
        ("1 microsecond", Ok((0, 0, 1))),
        ("2 microseconds", Ok((0, 0, 2))),
        ("3 us", Ok((0, 0, 3))),
        ("4 usec", Ok((0, 0, 4))),
        ("5 usecs", Ok((0, 0, 5))),
        ("6 useconds", Ok((0, 0, 6))),
        ("7 microsecondsxyz", Ok((0, 0, 7))),
        ("1 millisecond", Ok((0, 0, 1000))),
        ("2 milliseconds", Ok((0, 0, 2000))),
        ("3 ms", Ok((0, 0, 3000))),
        ("4 msec", Ok((0, 0, 4000))),
        ("5 msecs", Ok((0, 0, 5000))),
        ("6 mseconds", Ok((0, 0, 6000))),
        ("1 second", Ok((0, 0, 1000000))),
        ("2 seconds", Ok((0, 0, 2000000))),
        ("3 s", Ok((0, 0, 3000000))),
        ("4 sec", Ok((0, 0, 4000000))),
        ("5 secs", Ok((0, 0, 5000000))),
        ("1 minute", Ok((0, 0, 60000000))),
        ("2 minutes", Ok((0, 0, 120000000))),
        ("3 m", Ok((0, 0, 180000000))),
        ("4 min", Ok((0, 0, 240000000))),
        ("5 mins", Ok((0, 0, 300000000))),
        ("1 hour", Ok((0, 0, 3600000000))),
        ("2 hours", Ok((0, 0, 7200000000))),
        ("3 h", Ok((0, 0, 10800000000))),
        ("4 hr", Ok((0, 0, 14400000000))),
        ("5 hrs", Ok((0, 0, 18000000000))),
        ("1 day", Ok((0, 1, 0))),
        ("2 days", Ok((0, 2, 0))),
        ("3 d", Ok((0, 3, 0))),
        ("1 week", Ok((0, 7, 0))),
        ("2 weeks", Ok((0, 14, 0))),
        ("3 w", Ok((0, 21, 0))),
        ("1 month", Ok((1, 0, 0))),
        ("2 months", Ok((2, 0, 0))),
        ("3 mon", Ok((3, 0, 0))),
        ("4 mons", Ok((4, 0, 0))),
        ("1 year", Ok((12, 0, 0))),
        ("2 years", Ok((24, 0, 0))),
        ("3 y", Ok((36, 0, 0))),
        ("4 yr", Ok((48, 0, 0))),
        ("5 yrs", Ok((60, 0, 0))),
        ("1 decade", Ok((120, 0, 0))),
        ("2 decades", Ok((240, 0, 0))),
        ("3 dec", Ok((360, 0, 0))),
        ("4 decs", Ok((480, 0, 0))),
        ("1 century", Ok((1200, 0, 0))),
        ("2 centuries", Ok((2400, 0, 0))),
        ("3 c", Ok((3600, 0, 0))),
        ("4 cent", Ok((4800, 0, 0))),
        ("1 millennium", Ok((12000, 0, 0))),
        ("2 millennia", Ok((24000, 0, 0))),
        ("3 mil", Ok((36000, 0, 0))),
        ("4 mils", Ok((48000, 0, 0))),
    ];

    /// Fractions spill to the smaller units: a year's to whole months, a month's to days at 30 a month, a week's or a day's to time.
    const FRACTIONS: &[Case] = &[
        ("1.5 days", Ok((0, 1, 43200000000))),
        ("1.5 months", Ok((1, 15, 0))),
        ("0.5 years", Ok((6, 0, 0))),
        ("1.5 years", Ok((18, 0, 0))),
        ("0.1 years", Ok((1, 0, 0))),
        ("1.01 years", Ok((12, 0, 0))),
        ("1.5 weeks", Ok((0, 10, 43200000000))),
        ("1.5 hours", Ok((0, 0, 5400000000))),
        ("1.5 minutes", Ok((0, 0, 90000000))),
        ("1.5 seconds", Ok((0, 0, 1500000))),
        ("1.5 ms", Ok((0, 0, 1500))),
        ("0.5 us", Ok((0, 0, 0))),
        ("0.6 us", Ok((0, 0, 1))),
        (".5 days", Ok((0, 0, 43200000000))),
        ("-1.5 days", Ok((0, -1, -43200000000))),
        ("-0.5 days", Ok((0, 0, -43200000000))),
        ("1.5 decades", Ok((180, 0, 0))),
        ("0.01 centuries", Ok((12, 0, 0))),
        ("0.001 millennium", Ok((12, 0, 0))),
    ];

    /// SQL-standard `years-months`, with days and a time.
    const SQL_STANDARD: &[Case] = &[
        ("1-2", Ok((14, 0, 0))),
        ("-1-2", Ok((-14, 0, 0))),
        ("+1-2", Ok((14, 0, 0))),
        ("1-2 3 4:05:06", Ok((14, 3, 14706000000))),
        ("-1-2 +3 -4:05:06", Ok((-14, 3, -14706000000))),
        ("1-2 years", Ok((14, 0, 0))),
        ("1-", Ok((12, 0, 0))),
        ("1-2.5", Ok((14, 0, 500000))),
    ];

    /// ISO 8601, with designators and in the alternative format.
    const ISO_8601: &[Case] = &[
        ("P1Y2M3DT4H5M6S", Ok((14, 3, 14706000000))),
        ("P1Y", Ok((12, 0, 0))),
        ("P2M", Ok((2, 0, 0))),
        ("P3W", Ok((0, 21, 0))),
        ("P4D", Ok((0, 4, 0))),
        ("PT5H", Ok((0, 0, 18000000000))),
        ("PT6M", Ok((0, 0, 360000000))),
        ("PT7S", Ok((0, 0, 7000000))),
        ("P0.5Y", Ok((6, 0, 0))),
        ("P1.5M", Ok((1, 15, 0))),
        ("P1W", Ok((0, 7, 0))),
        ("P0.5W", Ok((0, 3, 43200000000))),
        ("PT1.5S", Ok((0, 0, 1500000))),
        ("P-1Y-2M", Ok((-14, 0, 0))),
        ("P1Y-2M3DT-4H", Ok((10, 3, -14400000000))),
        ("P1Y1Y", Ok((24, 0, 0))),
        ("P1DT", Ok((0, 1, 0))),
        ("PT", Ok((0, 0, 0))),
        ("P1", Ok((12, 0, 0))),
        ("P0001-02-03T04:05:06", Ok((14, 3, 14706000000))),
        ("P0001-02", Ok((14, 0, 0))),
        ("P0001-02-03", Ok((14, 3, 0))),
        ("P-1-2", Ok((-10, 0, 0))),
        ("P00010203T040506", Ok((14, 3, 14706000000))),
        ("P00010203", Ok((14, 3, 0))),
        ("PT040506", Ok((0, 0, 14706000000))),
        ("PT040506.6", Ok((0, 0, 14706000001))),
        ("P1e1Y", Ok((120, 0, 0))),
        ("P0x10Y", Ok((192, 0, 0))),
    ];

    /// PostgreSQL 16's own corner cases, kept: `ago` anywhere negates everything, a unit without a number is ignored, a time of day replaces the time to its right, a date/time keyword stays a word before a number.
    const QUIRKS: &[Case] = &[
        ("1 day 02:03:04 ago", Ok((0, -1, -7384000000))),
        ("1 day hour", Ok((0, 1, 0))),
        ("2 minutes ago 5 days", Ok((0, -5, -120000000))),
        ("1:00 1.5 days", Ok((0, 1, 3600000000))),
        ("1.5 days 1:00", Ok((0, 1, 46800000000))),
        ("d1", Ok((0, 0, 1000000))),
        ("mon1", Ok((0, 0, 1000000))),
    ];

    /// Inputs PostgreSQL refuses as malformed (22007).
    const SYNTAX_ERRORS: &[Case] = &[
        ("", Err("22007")),
        ("   ", Err("22007")),
        ("junk", Err("22007")),
        ("1 day junk", Err("22007")),
        ("1 days 2 days", Err("22007")),
        ("1 2", Err("22007")),
        ("02:03 4", Err("22007")),
        ("1.5 seconds 3 milliseconds", Err("22007")),
        ("1 quarter", Err("22007")),
        ("1 timezone", Err("22007")),
        ("5 ago", Err("22007")),
        ("1 day 5 ago", Err("22007")),
        ("1/2", Err("22007")),
        ("1-2-3", Err("22007")),
        ("1.5.6", Err("22007")),
        ("-.5 days", Err("22007")),
        ("1 day -", Err("22007")),
        ("infinity", Err("22007")),
        ("-infinity", Err("22007")),
        ("now", Err("22007")),
        ("day1", Err("22007")),
        ("p1y", Err("22007")),
        ("P", Err("22007")),
        (" P1Y", Err("22007")),
        ("P1Y ", Err("22007")),
        ("P1H", Err("22007")),
        ("PT1D", Err("22007")),
        ("P1Y2", Err("22007")),
        ("PT1:2:3:4", Err("22007")),
        ("P1e400Y", Err("22007")),
    ];

    /// Fields out of range (22015) and totals out of range (22008), with the values just inside.
    const RANGE_ERRORS: &[Case] = &[
        ("1:60", Err("22015")),
        ("1:00:61", Err("22015")),
        ("60:00.5", Err("22015")),
        ("1-12", Err("22015")),
        ("-1--2", Err("22015")),
        ("99999999999999999999 seconds", Err("22015")),
        ("2147483648 days", Err("22015")),
        ("2147483647 days 1 day", Err("22015")),
        ("178956971 years", Err("22008")),
        ("178956970 years", Ok((2147483640, 0, 0))),
        ("-178956970 years -8 months", Ok((-2147483648, 0, 0))),
        ("-178956970 years -9 months", Err("22008")),
        ("2147483647 months", Ok((2147483647, 0, 0))),
        ("2147483647 months 1 year", Err("22008")),
        ("9223372036854775807 us", Ok((0, 0, 9223372036854775807))),
        ("9223372036854775807 us 1 us", Err("22015")),
        ("2562047788 hours", Ok((0, 0, 9223372036800000000))),
        ("2562047789 hours", Err("22015")),
        ("99999999999999999999:00", Err("22015")),
        ("P1e20Y", Err("22015")),
        ("P-infY", Err("22015")),
        ("P2147483648D", Err("22015")),
        ("-2147483648 days ago", Err("22015")),
        ("1 day ago ago", Ok((0, -1, 0))),
    ];

    fn check(cases: &[Case]) {
        let failures: Vec<String> = cases
            .iter()
            .filter_map(|&(input, expected)| {
                let got = parse_pg_interval(input)
                    .map(|i| (i.months, i.days, i.microseconds))
                    .map_err(|e| e.sqlstate());
                (got != expected).then(|| format!("{input:?}: expected {expected:?}, got {got:?}"))
            })
            .collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn postgres_format() {
        check(POSTGRES_FORMAT);
    }

    #[test]
    fn every_unit_spelling() {
        check(UNITS);
    }

    #[test]
    fn fractions_spill_as_postgres_spills_them() {
        check(FRACTIONS);
    }

    #[test]
    fn sql_standard_format() {
        check(SQL_STANDARD);
    }

    #[test]
    fn iso_8601_formats() {
        check(ISO_8601);
    }

    #[test]
    fn postgres_corner_cases() {
        check(QUIRKS);
    }

    #[test]
    fn malformed_inputs_are_refused() {
        check(SYNTAX_ERRORS);
    }

    #[test]
    fn values_out_of_range_are_refused() {
        check(RANGE_ERRORS);
    }

    #[test]
    fn limits_of_postgres_work_buffer() {
        // PostgreSQL keeps at most 25 fields, and 255 bytes of them counting
        // one terminator each; beyond either the input is malformed.
        let ago = |n: usize| format!("1 day{}", " ago".repeat(n));
        assert_eq!(parse_pg_interval(&ago(23)).map(|i| i.days), Ok(-1));
        assert_eq!(
            parse_pg_interval(&ago(24)).map_err(|e| e.sqlstate()),
            Err(INVALID_DATETIME_FORMAT)
        );
        let long = |digits: usize| format!("1 day {}1", "0".repeat(digits - 1));
        assert_eq!(
            parse_pg_interval(&long(249)).map(|i| i.microseconds),
            Ok(1_000_000)
        );
        assert_eq!(
            parse_pg_interval(&long(250)).map_err(|e| e.sqlstate()),
            Err(INVALID_DATETIME_FORMAT)
        );
        // White space between fields costs nothing.
        let spaced = format!("1{}day", " ".repeat(1_000));
        assert_eq!(parse_pg_interval(&spaced).map(|i| i.days), Ok(1));
    }

    #[test]
    fn messages_are_postgres_own() {
        let message = |input: &str| parse_interval(input).unwrap_err().to_string();
        assert_eq!(
            message("1 day junk"),
            r#"invalid input syntax for type interval: "1 day junk""#
        );
        assert_eq!(message(""), r#"invalid input syntax for type interval: """#);
        assert_eq!(
            message("1:60"),
            r#"interval field value out of range: "1:60""#
        );
        assert_eq!(message("178956971 years"), "interval out of range");
    }

    #[test]
    fn arrow_representation_in_nanoseconds() {
        assert_eq!(
            parse_interval("1 year 2 mons -3 days 04:05:06.789"),
            Ok(IntervalMonthDayNano::new(14, -3, 14_706_789_000_000))
        );
        assert_eq!(
            parse_interval("9223372036854775 us"),
            Ok(IntervalMonthDayNano::new(0, 0, 9_223_372_036_854_775_000))
        );
        // PostgreSQL holds more time than arrow's nanoseconds do.
        assert_eq!(
            parse_pg_interval("9223372036854776 us").map(|i| i.microseconds),
            Ok(9_223_372_036_854_776)
        );
        assert_eq!(
            parse_interval("9223372036854776 us"),
            Err(InvalidInterval::OutOfRange)
        );
    }
}
