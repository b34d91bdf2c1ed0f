//! `to_char(date | timestamp | timestamptz, text)` with PostgreSQL's
//! template patterns (`YYYY-MM-DD HH24:MI:SS`, `Mon DD, YYYY`, `FMDay`,
//! `DDth`, `"quoted text"`, ...): a timestamptz is printed in the session's
//! `TimeZone`. DataFusion's `to_char` takes chrono's `%Y` patterns and
//! returns PostgreSQL's templates unchanged, so it is replaced. Numbers are
//! printed by [`number`]'s templates (`FM999,990.00`). An interval is
//! printed from its fields as PostgreSQL splits it (years and months of its
//! months, its days, hours of its time, ...), each with its own sign; the
//! patterns PostgreSQL rejects for an interval (names of months and days,
//! zones, eras) fail with 22007 as there, and the few that read it as a
//! calendar date (`J`, `IW`, `IYYY`, ...) are refused (0A000).

mod number;

use std::sync::Arc;

use chrono::{Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use datafusion::arrow::datatypes::{
    DataType, Date32Type, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::engine::SessionInfo;
use super::settings::zone::SessionZone;

pub(super) const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
pub(super) const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const ROMAN: [&str; 12] = [
    "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII",
];

/// Template patterns, longest first so that `HH24` wins over `HH`; matched
/// without regard to case, which only decides how names are printed.
const PATTERNS: [&str; 59] = [
    "Y,YYY", "SSSSS", "MONTH", "HH24", "HH12", "IDDD", "IYYY", "YYYY", "SSSS", "A.D.", "A.M.",
    "B.C.", "P.M.", "MON", "DAY", "DDD", "IYY", "YYY", "FF1", "FF2", "FF3", "FF4", "FF5", "FF6",
    "TZH", "TZM", "HH", "MI", "SS", "MS", "US", "AM", "PM", "AD", "BC", "DD", "DY", "ID", "IW",
    "IY", "YY", "MM", "RM", "WW", "CC", "TZ", "OF", "D", "I", "J", "Q", "W", "Y", "FM", "TM", "FX",
    "TH", "SP", "EEEE",
];

pub fn function() -> ScalarUDF {
    ScalarUDF::new_from_impl(ToChar {
        signature: Signature::user_defined(Volatility::Stable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToChar {
    signature: Signature,
}

fn timestamptz() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
}

impl ScalarUDFImpl for ToChar {
    fn name(&self) -> &str {
        "to_char"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let [value, template] = arg_types else {
            return Err(DataFusionError::Plan(format!(
                "function to_char() with {} arguments does not exist",
                arg_types.len()
            )));
        };
        if !matches!(
            template,
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null
        ) {
            return Err(DataFusionError::Plan(
                "function to_char() needs a text template".to_owned(),
            ));
        }
        let value = match value {
            DataType::Date32 | DataType::Date64 => DataType::Date32,
            DataType::Timestamp(_, None) | DataType::Null => {
                DataType::Timestamp(TimeUnit::Microsecond, None)
            }
            DataType::Timestamp(_, Some(_)) => timestamptz(),
            DataType::Int8 | DataType::Int16 | DataType::Int32 => DataType::Int32,
            DataType::UInt8 | DataType::UInt16 => DataType::Int32,
            DataType::Int64 | DataType::UInt32 => DataType::Int64,
            DataType::Float16 | DataType::Float32 => DataType::Float32,
            DataType::Float64 => DataType::Float64,
            decimal @ (DataType::Decimal128(..) | DataType::Decimal256(..)) => decimal.clone(),
            DataType::Interval(_) => DataType::Interval(IntervalUnit::MonthDayNano),
            // The difference of two timestamps with a zone.
            DataType::Duration(_) => DataType::Duration(TimeUnit::Microsecond),
            other => {
                return Err(DataFusionError::NotImplemented(format!(
                    "to_char() of {} is not supported",
                    super::json::pg_type_name(other)
                )));
            }
        };
        Ok(vec![value, DataType::Utf8])
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let zone = SessionInfo::of(&args.config_options)
            .map(|info| info.settings().time_zone())
            .unwrap_or(SessionZone::UTC);
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let [values, templates] = arrays.as_slice() else {
            return Err(DataFusionError::Internal(
                "to_char takes two arguments".into(),
            ));
        };
        let templates = templates.as_string::<i32>();
        let mut out = StringBuilder::new();
        if let Some(number) = numbers(values) {
            let pg_error = |error| DataFusionError::External(Box::new(error));
            // The template is parsed again only when it changes.
            let mut parsed: Option<(&str, number::Template)> = None;
            for row in 0..values.len() {
                if values.is_null(row) || templates.is_null(row) {
                    out.append_null();
                    continue;
                }
                let text = templates.value(row);
                if parsed.as_ref().is_none_or(|(last, _)| *last != text) {
                    parsed = Some((text, number::parse(text).map_err(pg_error)?));
                }
                if let Some((_, template)) = &parsed {
                    out.append_value(number::render(template, number(row)).map_err(pg_error)?);
                }
            }
            return super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar);
        }
        if matches!(
            values.data_type(),
            DataType::Interval(_) | DataType::Duration(_)
        ) {
            for row in 0..values.len() {
                if values.is_null(row) || templates.is_null(row) {
                    out.append_null();
                    continue;
                }
                let parts = IntervalParts::of(interval_at(values, row));
                out.append_value(render(
                    templates.value(row),
                    |pattern, written, fill_mode| parts.field(pattern, written, fill_mode),
                )?);
            }
            return super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar);
        }
        for row in 0..values.len() {
            if values.is_null(row) || templates.is_null(row) {
                out.append_null();
                continue;
            }
            let Some(moment) = moment(values, row, &zone) else {
                out.append_null();
                continue;
            };
            out.append_value(render(
                templates.value(row),
                |pattern, written, fill_mode| Ok(field(pattern, written, &moment, fill_mode)),
            )?);
        }
        super::functions::columnar(Arc::new(out.finish()) as ArrayRef, scalar)
    }
}

/// A decimal type's scale as a non-negative one and the factor its digits
/// take to be at that scale (10^n for a negative scale -n, else 1).
fn decimal_scale(scale: i8) -> (u32, datafusion::arrow::datatypes::i256) {
    use datafusion::arrow::datatypes::i256;
    match u32::try_from(scale) {
        Ok(scale) => (scale, i256::ONE),
        Err(_) => (
            0,
            i256::from_i128(10).wrapping_pow(u32::from(scale.unsigned_abs())),
        ),
    }
}

/// The numbers of `values` by row, when they are numbers.
fn numbers(values: &ArrayRef) -> Option<Box<dyn Fn(usize) -> number::Number + '_>> {
    use datafusion::arrow::datatypes::{
        Decimal128Type, Decimal256Type, Float32Type, Float64Type, Int32Type, Int64Type, i256,
    };
    use number::Number;
    Some(match values.data_type() {
        DataType::Int32 => {
            let values = values.as_primitive::<Int32Type>();
            Box::new(move |row| Number::Int4(values.value(row)))
        }
        DataType::Int64 => {
            let values = values.as_primitive::<Int64Type>();
            Box::new(move |row| Number::Int8(values.value(row)))
        }
        DataType::Float32 => {
            let values = values.as_primitive::<Float32Type>();
            Box::new(move |row| Number::Float4(values.value(row)))
        }
        DataType::Float64 => {
            let values = values.as_primitive::<Float64Type>();
            Box::new(move |row| Number::Float8(values.value(row)))
        }
        // A negative scale (digits × 10^n) becomes digits at scale 0.
        DataType::Decimal128(_, scale) => {
            let (scale, factor) = decimal_scale(*scale);
            let values = values.as_primitive::<Decimal128Type>();
            Box::new(move |row| Number::Numeric {
                digits: i256::from_i128(values.value(row)).wrapping_mul(factor),
                scale,
            })
        }
        DataType::Decimal256(_, scale) => {
            let (scale, factor) = decimal_scale(*scale);
            let values = values.as_primitive::<Decimal256Type>();
            Box::new(move |row| Number::Numeric {
                digits: values.value(row).wrapping_mul(factor),
                scale,
            })
        }
        _ => return None,
    })
}

/// A value to print: its local date and time, and for a timestamptz the
/// offset (seconds east) and abbreviation of the session's zone then.
struct Moment {
    local: NaiveDateTime,
    zone: Option<(i32, String)>,
}

fn moment(values: &ArrayRef, row: usize, zone: &SessionZone) -> Option<Moment> {
    match values.data_type() {
        DataType::Date32 => {
            let days = values.as_primitive::<Date32Type>().value(row);
            let date = chrono::NaiveDate::from_num_days_from_ce_opt(days.checked_add(719_163)?)?;
            Some(Moment {
                local: date.and_hms_opt(0, 0, 0)?,
                zone: None,
            })
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let micros = values.as_primitive::<TimestampMicrosecondType>().value(row);
            let utc = chrono::DateTime::from_timestamp_micros(micros)?.naive_utc();
            match tz {
                None => Some(Moment {
                    local: utc,
                    zone: None,
                }),
                Some(_) => {
                    let (east, abbreviation) = zone.offset_at(&utc);
                    Some(Moment {
                        local: utc + chrono::Duration::seconds(i64::from(east)),
                        zone: Some((east, abbreviation)),
                    })
                }
            }
        }
        _ => None,
    }
}

/// How a name pattern was written: `MONTH`, `Month` or `month`.
#[derive(Clone, Copy)]
enum Case {
    Upper,
    Capitalized,
    Lower,
}

fn case_of(written: &str) -> Case {
    let mut letters = written.chars().filter(|c| c.is_alphabetic());
    match (letters.next(), letters.next()) {
        (Some(first), Some(second)) if first.is_uppercase() && second.is_uppercase() => Case::Upper,
        (Some(first), _) if first.is_uppercase() => Case::Capitalized,
        _ => Case::Lower,
    }
}

fn cased(name: &str, case: Case) -> String {
    match case {
        Case::Upper => name.to_uppercase(),
        Case::Lower => name.to_lowercase(),
        Case::Capitalized => name.to_owned(),
    }
}

/// `template` filled in with the fields `field` gives for each pattern
/// (as written, and whether `FM` came before it), as PostgreSQL's
/// `to_char` does.
fn render(
    template: &str,
    mut field: impl FnMut(&str, &str, bool) -> Result<Field>,
) -> Result<String> {
    let mut out = String::new();
    let mut rest = template;
    let mut fill_mode = false;
    while let Some(first) = rest.chars().next() {
        if first == '"' {
            // Quoted text is copied; a backslash escapes the next character.
            let mut chars = rest[1..].char_indices();
            let mut end = rest.len();
            while let Some((at, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            out.push(escaped);
                        }
                    }
                    '"' => {
                        end = at + 2;
                        break;
                    }
                    c => out.push(c),
                }
            }
            rest = &rest[end.min(rest.len())..];
            continue;
        }
        if first == '\\' && rest[1..].starts_with('"') {
            out.push('"');
            rest = &rest[2..];
            continue;
        }
        let Some(pattern) = PATTERNS.iter().find(|pattern| {
            rest.get(..pattern.len())
                .is_some_and(|head| head.eq_ignore_ascii_case(pattern))
        }) else {
            out.push(first);
            rest = &rest[first.len_utf8()..];
            continue;
        };
        let written = &rest[..pattern.len()];
        rest = &rest[pattern.len()..];
        match *pattern {
            "FM" => {
                fill_mode = true;
                continue;
            }
            // Translation mode, fixed format, spell mode: no effect here.
            "TM" | "FX" | "SP" => continue,
            // A suffix without a number before it, or a numeric-only pattern.
            "TH" | "EEEE" => {
                out.push_str(written);
                continue;
            }
            _ => {}
        }
        let value = field(pattern, written, fill_mode)?;
        out.push_str(&value.text);
        // `DDth`: the ordinal suffix of the number just printed.
        if let Some(number) = value.number
            && let Some(suffix) = rest.get(..2).filter(|s| s.eq_ignore_ascii_case("TH"))
        {
            let ordinal = ordinal(number);
            out.push_str(&if suffix == "TH" {
                ordinal.to_uppercase()
            } else {
                ordinal.to_owned()
            });
            rest = &rest[2..];
        }
        fill_mode = false;
    }
    Ok(out)
}

fn ordinal(number: i64) -> &'static str {
    let number = number.abs();
    if (11..=13).contains(&(number % 100)) {
        return "th";
    }
    match number % 10 {
        1 => "st",
        2 => "nd",
        3 => "rd",
        _ => "th",
    }
}

/// One pattern's text, and its number for a `th` suffix.
struct Field {
    text: String,
    number: Option<i64>,
}

/// `value` zero-padded to `width` characters, its sign counted (C's
/// `%0*d`), or as it is under `FM`.
fn padded(value: i64, width: usize, fill_mode: bool) -> Field {
    Field {
        text: if fill_mode {
            value.to_string()
        } else {
            format!("{value:0width$}")
        },
        number: Some(value),
    }
}

/// Row `row` of an interval array, or of a duration (microseconds) as the
/// interval PostgreSQL's timestamptz difference gives: whole days of 24
/// hours, and the time left.
fn interval_at(
    values: &ArrayRef,
    row: usize,
) -> datafusion::arrow::datatypes::IntervalMonthDayNano {
    use datafusion::arrow::datatypes::{DurationMicrosecondType, IntervalMonthDayNano};
    match values.data_type() {
        DataType::Duration(_) => {
            let micros = values.as_primitive::<DurationMicrosecondType>().value(row);
            let days = micros / 86_400_000_000;
            IntervalMonthDayNano::new(
                0,
                i32::try_from(days).unwrap_or(i32::MAX),
                (micros - days * 86_400_000_000) * 1000,
            )
        }
        _ => values.as_primitive::<IntervalMonthDayNanoType>().value(row),
    }
}

/// An interval's fields as PostgreSQL's `to_char` reads them: whole years
/// and the months left of its months, its days, and hours, minutes,
/// seconds and microseconds of its time, each truncated toward zero so
/// that each carries the interval's sign.
struct IntervalParts {
    years: i64,
    months: i64,
    days: i64,
    hours: i64,
    minutes: i64,
    seconds: i64,
    micros: i64,
}

impl IntervalParts {
    fn of(interval: datafusion::arrow::datatypes::IntervalMonthDayNano) -> Self {
        let time = interval.nanoseconds / 1000;
        Self {
            years: i64::from(interval.months / 12),
            months: i64::from(interval.months % 12),
            days: i64::from(interval.days),
            hours: time / 3_600_000_000,
            minutes: time % 3_600_000_000 / 60_000_000,
            seconds: time % 60_000_000 / 1_000_000,
            micros: time % 1_000_000,
        }
    }

    fn field(&self, pattern: &str, written: &str, fill_mode: bool) -> Result<Field> {
        // Two digits, three with a minus sign, as PostgreSQL pads the
        // fields that may be negative.
        let signed = |value: i64, width: usize| {
            padded(value, if value < 0 { width + 1 } else { width }, fill_mode)
        };
        let text = |text: String| Field { text, number: None };
        let year_day = (self.years * 12 + self.months) * 30 + self.days;
        Ok(match pattern {
            "HH" | "HH12" => signed(
                match self.hours % 12 {
                    0 => 12,
                    h => h,
                },
                2,
            ),
            "HH24" => signed(self.hours, 2),
            "MI" => signed(self.minutes, 2),
            "SS" => signed(self.seconds, 2),
            "MS" | "FF3" => padded(self.micros / 1000, 3, false),
            "US" | "FF6" => padded(self.micros, 6, false),
            "FF1" | "FF2" | "FF4" | "FF5" => {
                let digits: u32 = pattern[2..].parse().unwrap_or(6);
                padded(self.micros / 10_i64.pow(6 - digits), digits as usize, false)
            }
            "SSSS" | "SSSSS" => padded(
                self.hours * 3600 + self.minutes * 60 + self.seconds,
                0,
                false,
            ),
            "AM" | "PM" | "A.M." | "P.M." => {
                let pm = self.hours % 24 >= 12;
                let name = match (pattern.len(), pm) {
                    (2, false) => "AM",
                    (2, true) => "PM",
                    (_, false) => "A.M.",
                    (_, true) => "P.M.",
                };
                text(cased(name, case_of(written)))
            }
            "YYYY" => signed(self.years, 4),
            "YYY" => signed(self.years % 1000, 3),
            "YY" => signed(self.years % 100, 2),
            "Y" => padded(self.years % 10, 1, false),
            "Y,YYY" => text(format!("{},{:03}", self.years / 1000, self.years % 1000)),
            "CC" => signed(self.years / 100, 2),
            "MM" => signed(self.months, 2),
            "DD" => padded(self.days, 2, fill_mode),
            "DDD" => padded(year_day, 3, fill_mode),
            "WW" => padded((year_day - 1) / 7 + 1, 2, fill_mode),
            "W" => padded((self.days - 1) / 7 + 1, 1, false),
            "Q" if self.months == 0 => text(String::new()),
            "Q" => padded((self.months - 1) / 3 + 1, 1, false),
            "RM" if self.months == 0 && self.years == 0 => text(String::new()),
            "RM" => {
                // The month's numeral, counted back from December when
                // the months are negative.
                let month = match self.months {
                    0 if self.years >= 0 => 12,
                    0 => 1,
                    m if m < 0 => 13 + m,
                    m => m,
                };
                let roman = cased(ROMAN[(month - 1) as usize], case_of(written));
                text(if fill_mode {
                    roman
                } else {
                    format!("{roman:<4}")
                })
            }
            "MONTH" | "MON" | "DAY" | "DY" | "D" | "ID" | "TZ" | "OF" | "TZH" | "TZM" | "AD"
            | "BC" | "A.D." | "B.C." => {
                return Err(DataFusionError::External(Box::new(
                    super::PgError::new(
                        super::sqlstate::INVALID_DATETIME_FORMAT,
                        "invalid format specification for an interval value",
                    )
                    .with_hint("Intervals are not tied to specific calendar dates."),
                )));
            }
            "IDDD" | "IYYY" | "IYY" | "IY" | "I" | "IW" | "J" => {
                return Err(DataFusionError::External(Box::new(super::PgError::new(
                    super::sqlstate::FEATURE_NOT_SUPPORTED,
                    format!("to_char() of an interval with the pattern {written} is not supported"),
                ))));
            }
            _ => text(written.to_owned()),
        })
    }
}

fn field(pattern: &str, written: &str, moment: &Moment, fill_mode: bool) -> Field {
    let t = &moment.local;
    let year = i64::from(t.year());
    // PostgreSQL prints BC years as positive numbers: year 0 is 1 BC.
    let shown_year = if year <= 0 { 1 - year } else { year };
    let number = |value: i64, width: usize| Field {
        text: if fill_mode {
            value.to_string()
        } else if value < 0 {
            format!("-{:0width$}", -value)
        } else {
            format!("{value:0width$}")
        },
        number: Some(value),
    };
    let name = |name: &str, width: usize| Field {
        text: {
            let name = cased(name, case_of(written));
            if fill_mode {
                name
            } else {
                format!("{name:<width$}")
            }
        },
        number: None,
    };
    let text = |text: String| Field { text, number: None };
    let hour12 = match t.hour() % 12 {
        0 => 12,
        h => i64::from(h),
    };
    let micros = i64::from(t.nanosecond() / 1000);
    let iso = t.iso_week();
    let pm = t.hour() >= 12;
    match pattern {
        "HH" | "HH12" => number(hour12, 2),
        "HH24" => number(i64::from(t.hour()), 2),
        "MI" => number(i64::from(t.minute()), 2),
        "SS" => number(i64::from(t.second()), 2),
        "MS" => number(micros / 1000, 3),
        "US" => number(micros, 6),
        "FF1" | "FF2" | "FF3" | "FF4" | "FF5" | "FF6" => {
            let digits: usize = pattern[2..].parse().unwrap_or(6);
            number(micros / 10_i64.pow(6 - digits as u32), digits)
        }
        "SSSS" | "SSSSS" => number(i64::from(t.num_seconds_from_midnight()), 0),
        "AM" | "PM" => text(cased(if pm { "PM" } else { "AM" }, case_of(written))),
        "A.M." | "P.M." => text(cased(if pm { "P.M." } else { "A.M." }, case_of(written))),
        "AD" | "BC" => text(cased(if year <= 0 { "BC" } else { "AD" }, case_of(written))),
        "A.D." | "B.C." => text(cased(
            if year <= 0 { "B.C." } else { "A.D." },
            case_of(written),
        )),
        "Y,YYY" => text(format!("{},{:03}", shown_year / 1000, shown_year % 1000)),
        "YYYY" => number(shown_year, 4),
        "YYY" => number(shown_year % 1000, 3),
        "YY" => number(shown_year % 100, 2),
        "Y" => number(shown_year % 10, 1),
        "IYYY" => number(i64::from(iso.year()), 4),
        "IYY" => number(i64::from(iso.year()) % 1000, 3),
        "IY" => number(i64::from(iso.year()) % 100, 2),
        "I" => number(i64::from(iso.year()) % 10, 1),
        "MONTH" => name(MONTHS[t.month0() as usize], 9),
        "MON" => name(&MONTHS[t.month0() as usize][..3], 3),
        "MM" => number(i64::from(t.month()), 2),
        "DAY" => name(DAYS[t.weekday().num_days_from_sunday() as usize], 9),
        "DY" => name(&DAYS[t.weekday().num_days_from_sunday() as usize][..3], 3),
        "DDD" => number(i64::from(t.ordinal()), 3),
        "IDDD" => number(
            i64::from((iso.week() - 1) * 7 + t.weekday().number_from_monday()),
            3,
        ),
        "DD" => number(i64::from(t.day()), 2),
        "D" => number(i64::from(t.weekday().number_from_sunday()), 1),
        "ID" => number(i64::from(t.weekday().number_from_monday()), 1),
        "W" => number(i64::from((t.day() - 1) / 7 + 1), 1),
        "WW" => number(i64::from((t.ordinal() - 1) / 7 + 1), 2),
        "IW" => number(i64::from(iso.week()), 2),
        "CC" => {
            let century = if year > 0 {
                (year + 99) / 100
            } else {
                -((shown_year + 99) / 100)
            };
            number(century, 2)
        }
        "J" => number(i64::from(t.num_days_from_ce()) + 1_721_425, 0),
        "Q" => number(i64::from(t.month0() / 3 + 1), 1),
        "RM" => {
            let roman = cased(ROMAN[t.month0() as usize], case_of(written));
            text(if fill_mode {
                roman
            } else {
                format!("{roman:<4}")
            })
        }
        "TZ" => text(match &moment.zone {
            Some((_, abbreviation)) => cased(abbreviation, case_of(written)),
            None => String::new(),
        }),
        "OF" => text(match &moment.zone {
            Some((east, _)) => super::settings::zone::iso_offset(*east),
            None => "+00".to_owned(),
        }),
        "TZH" => {
            let east = moment.zone.as_ref().map_or(0, |(east, _)| *east);
            text(format!(
                "{}{:02}",
                if east < 0 { '-' } else { '+' },
                east.abs() / 3600
            ))
        }
        "TZM" => {
            let east = moment.zone.as_ref().map_or(0, |(east, _)| *east);
            number(i64::from(east.abs() % 3600 / 60), 2)
        }
        _ => text(written.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Moment {
        Moment {
            local: NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").unwrap(),
            zone: None,
        }
    }

    #[test]
    fn patterns_as_postgresql_prints_them() {
        let t = at("2024-02-29 13:04:05.123456");
        assert_eq!(
            render_at("YYYY-MM-DD HH24:MI:SS", &t),
            "2024-02-29 13:04:05"
        );
        assert_eq!(render_at("Mon DD, YYYY", &t), "Feb 29, 2024");
        assert_eq!(
            render_at("Month|FMMonth|MONTH|month", &t),
            "February |February|FEBRUARY |february "
        );
        assert_eq!(render_at("Day Dy FMDay", &t), "Thursday  Thu Thursday");
        assert_eq!(render_at("HH:MI AM MS US", &t), "01:04 PM 123 123456");
        assert_eq!(
            render_at("DDth FMDDth Q WW IW D J", &t),
            "29th 29th 1 09 09 5 2460370"
        );
        assert_eq!(render_at("\"Year\" YYYY \"q\"Q", &t), "Year 2024 q1");
        assert_eq!(render_at("FMMM/FMDD/YY RM", &t), "2/29/24 II  ");
        assert_eq!(
            render_at("IDDD ID CC Y,YYY SSSS TZ OF", &t),
            "060 4 21 2,024 47045  +00"
        );
        assert_eq!(render_at("FMHH12th", &t), "1st");
        assert_eq!(
            render_at("YYYY BC CC", &at("-0056-03-15 00:00:00")),
            "0057 BC -01"
        );
        let zoned = Moment {
            local: at("2024-07-01 12:00:00").local,
            zone: Some((0, "UTC".to_owned())),
        };
        assert_eq!(render_at("TZ OF TZH TZM", &zoned), "UTC +00 +00 00");
    }

    fn render_at(template: &str, moment: &Moment) -> String {
        render(template, |pattern, written, fill_mode| {
            Ok(field(pattern, written, moment, fill_mode))
        })
        .unwrap()
    }

    fn render_interval(template: &str, months: i32, days: i32, micros: i64) -> String {
        let parts = IntervalParts::of(datafusion::arrow::datatypes::IntervalMonthDayNano::new(
            months,
            days,
            micros * 1000,
        ));
        render(template, |pattern, written, fill_mode| {
            parts.field(pattern, written, fill_mode)
        })
        .unwrap()
    }

    #[test]
    fn intervals_as_postgresql_prints_them() {
        // PostgreSQL 15: '1 year 14 mons 3 days 27:04:05.123456' and
        // '-1 year -2 mons -3 days -04:05:06.789'.
        let long = |template| render_interval(template, 26, 3, 97_445_123_456);
        let negative = |template| render_interval(template, -14, -3, -14_706_789_000);
        assert_eq!(long("HH24:MI:SS.MS US"), "27:04:05.123 123456");
        assert_eq!(negative("HH24:MI:SS.MS US"), "-04:-05:-06.-789 -789000");
        assert_eq!(long("HH HH12 AM SSSS"), "03 03 AM 97445");
        assert_eq!(negative("HH SSSS FMHH24 HH24th"), "-04 -14706 -4 -04th");
        assert_eq!(
            long("YYYY YYY YY Y Y,YYY CC MM DD DDD"),
            "0002 002 02 2 0,002 00 02 03 783"
        );
        assert_eq!(
            negative("YYYY YYY YY Y Y,YYY MM DD DDD"),
            "-0001 -001 -01 -1 0,-01 -02 -3 -423"
        );
        assert_eq!(long("WW W Q RM FMDDth"), "112 1 1 II   3rd");
        assert_eq!(negative("WW W Q RM FMDDth"), "-59 1 0 XI   -3rd");
        assert_eq!(render_interval("HH Q RM|DD", 0, 0, 0), "12  |00");
    }

    #[test]
    fn calendar_patterns_of_an_interval_fail_as_in_postgresql() {
        let parts = IntervalParts::of(datafusion::arrow::datatypes::IntervalMonthDayNano::new(
            1, 0, 0,
        ));
        let error = render("Month", |p, w, f| parts.field(p, w, f)).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("invalid format specification for an interval value")
        );
        let error = render("IW", |p, w, f| parts.field(p, w, f)).unwrap_err();
        assert!(error.to_string().contains("not supported"));
    }
}
