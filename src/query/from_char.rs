//! `to_date(text, template)` and `to_timestamp(text, template)` with
//! PostgreSQL's template patterns (`YYYY-MM-DD`, `DD Mon YYYY`,
//! `YYYY-MM-DD HH24:MI:SS.US`, `HH12:MI AM`, `"T"`, `FM`, `th`), read as
//! PostgreSQL reads them: a space or separator in the template matches one
//! space or separator in the text, or none; spaces before a field are
//! skipped; a numeric field followed by a separator takes as many digits as
//! there are, otherwise exactly its width; fields the template does not name
//! default to year 1 BC, January, the 1st, midnight; text left over after the
//! template is ignored. `to_timestamp` reads the wall-clock time in the
//! session's `TimeZone`. DataFusion's functions of these names take chrono's
//! `%Y` patterns, so calls with a template are planned with these.
//!
//! Week-based and Julian fields, centuries, Roman months and time zone
//! fields are refused (0A000), never guessed.

use std::sync::Arc;

use chrono::{Datelike, NaiveDate};
use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Date32Builder, TimestampMicrosecondBuilder,
};
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use super::PgError;
use super::engine::SessionInfo;
use super::settings::zone::SessionZone;
use super::sqlstate;
use super::to_char::{DAYS, MONTHS};

/// What a template pattern reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    /// A year of this many digits (`YYYY`, `YYY`, `YY`, `Y`).
    Year(usize),
    Month,
    MonthName {
        full: bool,
    },
    Day,
    DayOfYear,
    /// `DAY`, `DY`: read, then ignored as PostgreSQL ignores them.
    WeekdayName {
        full: bool,
    },
    /// `D` and `Q`: read, then ignored.
    Ignored(usize),
    Hour12,
    Hour24,
    Minute,
    Second,
    SecondsOfDay(usize),
    Millisecond,
    /// `US` (6 digits) and `FF1`..`FF6`.
    Fraction(usize),
    Meridiem {
        dots: bool,
    },
    Era {
        dots: bool,
    },
}

impl Field {
    /// Whether the field is read as digits.
    fn numeric(self) -> bool {
        !matches!(
            self,
            Field::MonthName { .. }
                | Field::WeekdayName { .. }
                | Field::Meridiem { .. }
                | Field::Era { .. }
        )
    }
}

/// Template patterns, in upper case and longest first; `None` for the
/// patterns pgaccel refuses.
const PATTERNS: [(&str, Option<Field>); 54] = [
    ("Y,YYY", None),
    ("SSSSS", Some(Field::SecondsOfDay(5))),
    ("MONTH", Some(Field::MonthName { full: true })),
    ("SSSS", Some(Field::SecondsOfDay(4))),
    ("HH24", Some(Field::Hour24)),
    ("HH12", Some(Field::Hour12)),
    ("IDDD", None),
    ("IYYY", None),
    ("YYYY", Some(Field::Year(4))),
    ("A.D.", Some(Field::Era { dots: true })),
    ("A.M.", Some(Field::Meridiem { dots: true })),
    ("B.C.", Some(Field::Era { dots: true })),
    ("P.M.", Some(Field::Meridiem { dots: true })),
    ("MON", Some(Field::MonthName { full: false })),
    ("DAY", Some(Field::WeekdayName { full: true })),
    ("DDD", Some(Field::DayOfYear)),
    ("IYY", None),
    ("YYY", Some(Field::Year(3))),
    ("FF1", Some(Field::Fraction(1))),
    ("FF2", Some(Field::Fraction(2))),
    ("FF3", Some(Field::Fraction(3))),
    ("FF4", Some(Field::Fraction(4))),
    ("FF5", Some(Field::Fraction(5))),
    ("FF6", Some(Field::Fraction(6))),
    ("TZH", None),
    ("TZM", None),
    ("HH", Some(Field::Hour12)),
    ("MI", Some(Field::Minute)),
    ("SS", Some(Field::Second)),
    ("MS", Some(Field::Millisecond)),
    ("US", Some(Field::Fraction(6))),
    ("AM", Some(Field::Meridiem { dots: false })),
    ("PM", Some(Field::Meridiem { dots: false })),
    ("AD", Some(Field::Era { dots: false })),
    ("BC", Some(Field::Era { dots: false })),
    ("DD", Some(Field::Day)),
    ("DY", Some(Field::WeekdayName { full: false })),
    ("ID", None),
    ("IW", None),
    ("IY", None),
    ("YY", Some(Field::Year(2))),
    ("MM", Some(Field::Month)),
    ("RM", None),
    ("WW", None),
    ("CC", None),
    ("TZ", None),
    ("OF", None),
    ("FX", None),
    ("D", Some(Field::Ignored(1))),
    ("I", None),
    ("J", None),
    ("Q", Some(Field::Ignored(1))),
    ("W", None),
    ("Y", Some(Field::Year(1))),
];

/// One element of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    Field {
        field: Field,
        /// The pattern as the template spells it, for error messages.
        name: String,
        /// `FM`: a numeric field takes as many digits as there are.
        fill: bool,
        /// `TH`/`th`: two characters after the field are skipped.
        ordinal: bool,
    },
    /// A space of the template.
    Space,
    /// A printable ASCII character that is neither a letter nor a digit.
    Separator,
    /// Any other character, or one in double quotes: skips one character.
    Char(char),
}

fn format_error(message: String) -> PgError {
    PgError::new(sqlstate::INVALID_DATETIME_FORMAT, message)
}

fn overflow(text: &str) -> PgError {
    PgError::new(
        sqlstate::DATETIME_FIELD_OVERFLOW,
        format!("date/time field value out of range: \"{text}\""),
    )
}

/// PostgreSQL's `isspace` in the C locale.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// PostgreSQL's `is_separator_char`.
fn is_separator(c: char) -> bool {
    c.is_ascii_graphic() && !c.is_ascii_alphanumeric()
}

/// The pattern of PATTERNS spelt at the start of `text`, as PostgreSQL
/// spells them: upper case, lower case, or capitalized for names.
fn pattern_at(text: &str) -> Option<(&'static str, Option<Field>)> {
    PATTERNS.iter().copied().find(|(pattern, _)| {
        let Some(spelt) = text.get(..pattern.len()) else {
            return false;
        };
        if spelt == *pattern || spelt == pattern.to_lowercase() {
            return true;
        }
        let named = matches!(*pattern, "MONTH" | "MON" | "DAY" | "DY");
        named && spelt.get(..1) == pattern.get(..1) && spelt[1..] == pattern[1..].to_lowercase()
    })
}

/// `template` as PostgreSQL's `parse_format` reads it for `function`.
fn parse_template(template: &str, function: &str) -> Result<Vec<Node>, PgError> {
    let mut nodes = Vec::new();
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        let mut fill = false;
        if let Some(after) = rest.strip_prefix("FM").or_else(|| rest.strip_prefix("fm")) {
            fill = true;
            rest = after;
        } else if let Some(after) = rest.strip_prefix("TM").or_else(|| rest.strip_prefix("tm")) {
            rest = after;
        }
        if let Some((pattern, field)) = pattern_at(rest) {
            let name = rest[..pattern.len()].to_owned();
            let Some(field) = field else {
                return Err(PgError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!("{function}() template pattern \"{name}\" is not supported"),
                ));
            };
            rest = &rest[pattern.len()..];
            let mut ordinal = false;
            if let Some(after) = rest.strip_prefix("TH").or_else(|| rest.strip_prefix("th")) {
                ordinal = true;
                rest = after;
            }
            if rest.starts_with("SP") || rest.starts_with("sp") {
                return Err(PgError::new(
                    sqlstate::FEATURE_NOT_SUPPORTED,
                    format!("{function}() template suffix \"SP\" is not supported"),
                ));
            }
            nodes.push(Node::Field {
                field,
                name,
                fill,
                ordinal,
            });
            continue;
        }
        if fill {
            // `FM` before no pattern is a literal of two characters.
            nodes.extend([Node::Char('F'), Node::Char('M')]);
            continue;
        }
        rest = &rest[c.len_utf8()..];
        match c {
            '"' => {
                // Quoted text: each character skips one of the input.
                let mut chars = rest.char_indices();
                let mut end = rest.len();
                while let Some((at, quoted)) = chars.next() {
                    match quoted {
                        '"' => {
                            end = at + 1;
                            break;
                        }
                        '\\' => {
                            if let Some((_, escaped)) = chars.next() {
                                nodes.push(Node::Char(escaped));
                            }
                        }
                        other => nodes.push(Node::Char(other)),
                    }
                }
                rest = &rest[end.min(rest.len())..];
            }
            '\\' if rest.starts_with('"') => {
                nodes.push(Node::Char('"'));
                rest = &rest[1..];
            }
            ' ' => nodes.push(Node::Space),
            c if is_separator(c) => nodes.push(Node::Separator),
            c => nodes.push(Node::Char(c)),
        }
    }
    Ok(nodes)
}

/// The fields read from a text, 0 where not given (as PostgreSQL's
/// `TmFromChar`).
#[derive(Debug, Default)]
struct Fields {
    year: i32,
    year_digits: usize,
    bc: bool,
    month: i32,
    day: i32,
    day_of_year: i32,
    hour: i32,
    twelve_hour: bool,
    pm: bool,
    minute: i32,
    second: i32,
    seconds_of_day: i32,
    millisecond: i32,
    microsecond: i32,
    ignored: i32,
}

/// PostgreSQL's `from_char_set_int`: a field set twice must agree.
fn set(slot: &mut i32, value: i32, name: &str) -> Result<(), PgError> {
    if *slot != 0 && *slot != value {
        return Err(format_error(format!(
            "conflicting values for \"{name}\" field in formatting string"
        ))
        .with_detail("This value contradicts a previous setting for the same field type."));
    }
    *slot = value;
    Ok(())
}

/// PostgreSQL's `adjust_partial_year_to_2020`.
fn near_2020(year: i32) -> i32 {
    match year {
        ..70 => year + 2000,
        70..100 => year + 1900,
        100..520 => year + 2000,
        520..1000 => year + 1000,
        _ => year,
    }
}

/// A reader of one input text.
struct Reader<'a> {
    chars: Vec<char>,
    at: usize,
    nodes: &'a [Node],
}

impl Reader<'_> {
    fn skip_spaces(&mut self) -> i32 {
        let start = self.at;
        while self.chars.get(self.at).copied().is_some_and(is_space) {
            self.at += 1;
        }
        (self.at - start) as i32
    }

    /// PostgreSQL's `is_next_separator`: whether the node after `index`
    /// cannot be a digit, so a numeric field may take every digit.
    fn next_is_separator(&self, index: usize) -> bool {
        if let Some(Node::Field { ordinal: true, .. }) = self.nodes.get(index) {
            return true;
        }
        match self.nodes.get(index + 1) {
            None => true,
            Some(Node::Field { field, .. }) => !field.numeric(),
            Some(Node::Char(c)) => !c.is_ascii_digit(),
            Some(_) => true,
        }
    }

    /// PostgreSQL's `from_char_parse_int_len`: the value and the number of
    /// characters it took.
    fn integer(&mut self, width: usize, greedy: bool, name: &str) -> Result<(i32, usize), PgError> {
        self.skip_spaces();
        let rest = &self.chars[self.at..];
        let shown: String = rest.iter().take(width).collect();
        let invalid = |detail: String| {
            format_error(format!("invalid value \"{shown}\" for \"{name}\"")).with_detail(detail)
        };
        let limit = if greedy {
            rest.len()
        } else {
            if rest.len() < width {
                return Err(format_error(format!(
                    "source string too short for \"{name}\" formatting field"
                ))
                .with_detail(format!(
                    "Field requires {width} characters, but only {} remain.",
                    rest.len()
                ))
                .with_hint(
                    "If your source string is not fixed-width, try using the \"FM\" modifier.",
                ));
            }
            width
        };
        // strtol: a sign, then digits.
        let mut used = 0;
        if matches!(rest.first(), Some('+' | '-')) && limit > 1 {
            used = 1;
        }
        let digits_start = used;
        while used < limit && rest[used].is_ascii_digit() {
            used += 1;
        }
        if used == digits_start {
            return Err(invalid("Value must be an integer.".to_owned()));
        }
        if !greedy && used < width {
            return Err(invalid(format!(
                "Field requires {width} characters, but only {used} could be parsed."
            ))
            .with_hint(
                "If your source string is not fixed-width, try using the \"FM\" modifier.",
            ));
        }
        let text: String = rest[..used].iter().collect();
        let value = text
            .parse::<i64>()
            .ok()
            .and_then(|v| i32::try_from(v).ok())
            .ok_or_else(|| {
                PgError::new(
                    sqlstate::DATETIME_FIELD_OVERFLOW,
                    format!("value for \"{name}\" in source string is out of range"),
                )
                .with_detail("Value must be in the range -2147483648 to 2147483647.")
            })?;
        self.at += used;
        Ok((value, used))
    }

    /// PostgreSQL's `from_char_seq_search`: the index of the word of
    /// `words` the text starts with, without regard to case.
    fn word(&mut self, words: &[&str], name: &str) -> Result<usize, PgError> {
        let rest = &self.chars[self.at..];
        for (index, word) in words.iter().enumerate() {
            let length = word.chars().count();
            let matches = rest.len() >= length
                && rest[..length]
                    .iter()
                    .zip(word.chars())
                    .all(|(a, b)| a.to_lowercase().eq(b.to_lowercase()));
            if matches {
                self.at += length;
                return Ok(index);
            }
        }
        let longest = words.iter().map(|w| w.len()).max().unwrap_or(0);
        let shown: String = rest.iter().take(longest).collect();
        Err(
            format_error(format!("invalid value \"{shown}\" for \"{name}\"")).with_detail(
                "The given value did not match any of the allowed values for this field.",
            ),
        )
    }

    /// PostgreSQL's `DCH_from_char` for one text.
    fn read(&mut self) -> Result<Fields, PgError> {
        let mut fields = Fields::default();
        let mut extra_skip = 0;
        for (index, node) in self.nodes.iter().enumerate() {
            if self.at >= self.chars.len() {
                break;
            }
            if index == 0 || matches!(node, Node::Field { .. }) {
                extra_skip += self.skip_spaces();
            }
            let (field, name, fill, ordinal) = match node {
                Node::Space | Node::Separator => {
                    extra_skip -= 1;
                    if self
                        .chars
                        .get(self.at)
                        .is_some_and(|&c| is_space(c) || is_separator(c))
                    {
                        self.at += 1;
                        extra_skip += 1;
                    }
                    continue;
                }
                Node::Char(_) => {
                    if extra_skip > 0 {
                        extra_skip -= 1;
                    } else {
                        self.at += 1;
                    }
                    continue;
                }
                Node::Field {
                    field,
                    name,
                    fill,
                    ordinal,
                } => (*field, name.as_str(), *fill, *ordinal),
            };
            let greedy = fill || self.next_is_separator(index);
            match field {
                Field::Year(digits) => {
                    let (value, used) = self.integer(digits, greedy, name)?;
                    set(&mut fields.year, value, name)?;
                    if digits < 4 && used < 4 {
                        fields.year = near_2020(fields.year);
                    }
                    fields.year_digits = digits;
                }
                Field::Month => {
                    let (value, _) = self.integer(2, greedy, name)?;
                    set(&mut fields.month, value, name)?;
                }
                Field::MonthName { full } => {
                    let abbreviations: Vec<&str> = MONTHS.iter().map(|m| &m[..3]).collect();
                    let words = if full {
                        &MONTHS[..]
                    } else {
                        &abbreviations[..]
                    };
                    let index = self.word(words, name)?;
                    set(&mut fields.month, index as i32 + 1, name)?;
                }
                Field::Day => {
                    let (value, _) = self.integer(2, greedy, name)?;
                    set(&mut fields.day, value, name)?;
                }
                Field::DayOfYear => {
                    let (value, _) = self.integer(3, greedy, name)?;
                    set(&mut fields.day_of_year, value, name)?;
                }
                Field::WeekdayName { full } => {
                    let abbreviations: Vec<&str> = DAYS.iter().map(|d| &d[..3]).collect();
                    let words = if full { &DAYS[..] } else { &abbreviations[..] };
                    self.word(words, name)?;
                }
                Field::Ignored(width) => {
                    let (value, _) = self.integer(width, greedy, name)?;
                    fields.ignored = value;
                }
                Field::Hour12 | Field::Hour24 => {
                    let (value, _) = self.integer(2, greedy, name)?;
                    set(&mut fields.hour, value, name)?;
                    fields.twelve_hour |= field == Field::Hour12;
                }
                Field::Minute => {
                    let (value, _) = self.integer(2, greedy, name)?;
                    set(&mut fields.minute, value, name)?;
                }
                Field::Second => {
                    let (value, _) = self.integer(2, greedy, name)?;
                    set(&mut fields.second, value, name)?;
                }
                Field::SecondsOfDay(width) => {
                    let (value, _) = self.integer(width, greedy, name)?;
                    set(&mut fields.seconds_of_day, value, name)?;
                }
                Field::Millisecond => {
                    let (value, used) = self.integer(3, greedy, name)?;
                    // `25` is 250 milliseconds, as `.25` would be.
                    let scaled = value * 10i32.pow(3u32.saturating_sub(used as u32));
                    set(&mut fields.millisecond, scaled, name)?;
                }
                Field::Fraction(width) => {
                    let (value, used) = self.integer(width, greedy, name)?;
                    let scaled = value * 10i32.pow(6u32.saturating_sub(used as u32));
                    set(&mut fields.microsecond, scaled, name)?;
                }
                Field::Meridiem { dots } => {
                    let words: &[&str] = if dots {
                        &["a.m.", "p.m."]
                    } else {
                        &["am", "pm"]
                    };
                    fields.pm = self.word(words, name)? == 1;
                    fields.twelve_hour = true;
                }
                Field::Era { dots } => {
                    let words: &[&str] = if dots {
                        &["a.d.", "b.c."]
                    } else {
                        &["ad", "bc"]
                    };
                    fields.bc = self.word(words, name)? == 1;
                }
            }
            if ordinal {
                self.at = (self.at + 2).min(self.chars.len());
            }
            extra_skip = self.skip_spaces();
        }
        Ok(fields)
    }
}

/// PostgreSQL's `do_to_timestamp`: the date and the microseconds past its
/// midnight `text` gives under `template`.
fn read(text: &str, nodes: &[Node]) -> Result<(NaiveDate, i64), PgError> {
    let fields = Reader {
        chars: text.chars().collect(),
        at: 0,
        nodes,
    }
    .read()?;
    let mut year = fields.year;
    if fields.year != 0 {
        if fields.bc {
            year = -year;
        }
        if year < 0 {
            year += 1;
        }
    }
    let mut month = if fields.month != 0 { fields.month } else { 1 };
    let mut day = if fields.day != 0 { fields.day } else { 1 };
    if fields.day_of_year != 0 && (month <= 1 || day <= 1) {
        if year == 0 && !fields.bc {
            return Err(format_error(
                "cannot calculate day of year without year information".to_owned(),
            ));
        }
        let january = NaiveDate::from_ymd_opt(year, 1, 1).ok_or_else(|| overflow(text))?;
        let date = january
            .checked_add_days(chrono::Days::new(
                u64::try_from(fields.day_of_year - 1).map_err(|_| overflow(text))?,
            ))
            .ok_or_else(|| overflow(text))?;
        if month <= 1 {
            month = date.month() as i32;
        }
        if day <= 1 {
            day = date.day() as i32;
        }
        if date.year() != year {
            return Err(overflow(text));
        }
    }
    let date = u32::try_from(month)
        .ok()
        .zip(u32::try_from(day).ok())
        .and_then(|(month, day)| NaiveDate::from_ymd_opt(year, month, day))
        .ok_or_else(|| overflow(text))?;
    let (mut hour, mut minute, mut second) = (0, 0, 0);
    if fields.seconds_of_day != 0 {
        let seconds = fields.seconds_of_day;
        (hour, minute, second) = (seconds / 3600, seconds % 3600 / 60, seconds % 60);
    }
    if fields.second != 0 {
        second = fields.second;
    }
    if fields.minute != 0 {
        minute = fields.minute;
    }
    if fields.hour != 0 {
        hour = fields.hour;
    }
    if fields.twelve_hour {
        if !(1..=12).contains(&hour) {
            return Err(
                format_error(format!("hour \"{hour}\" is invalid for the 12-hour clock"))
                    .with_hint("Use the 24-hour clock, or give an hour between 1 and 12."),
            );
        }
        if fields.pm && hour < 12 {
            hour += 12;
        } else if !fields.pm && hour == 12 {
            hour = 0;
        }
    }
    let fraction = i64::from(fields.millisecond) * 1000 + i64::from(fields.microsecond);
    if !(0..24).contains(&hour)
        || !(0..60).contains(&minute)
        || !(0..60).contains(&second)
        || !(0..1_000_000).contains(&fraction)
    {
        return Err(overflow(text));
    }
    let micros = (i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second)) * 1_000_000
        + fraction;
    Ok((date, micros))
}

/// `to_date(text, template)` (`date`) or `to_timestamp(text, template)`.
pub fn function(date: bool) -> ScalarUDF {
    ScalarUDF::new_from_impl(FromChar {
        date,
        signature: Signature::any(2, Volatility::Stable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FromChar {
    date: bool,
    signature: Signature,
}

/// Days from 0001-01-01 (chrono's day 1) to 1970-01-01.
const UNIX_EPOCH_DAYS: i32 = 719_163;

impl ScalarUDFImpl for FromChar {
    fn name(&self) -> &str {
        if self.date {
            "pgaccel_to_date"
        } else {
            "pgaccel_to_timestamp"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(if self.date {
            DataType::Date32
        } else {
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let zone = SessionInfo::of(&args.config_options)
            .map(|info| info.settings().time_zone())
            .unwrap_or(SessionZone::UTC);
        let (arrays, scalar) = super::functions::argument_arrays(&args)?;
        let [texts, templates] = arrays.as_slice() else {
            return Err(DataFusionError::Internal(format!(
                "{} takes two arguments",
                self.name()
            )));
        };
        let texts = datafusion::arrow::compute::cast(texts, &DataType::Utf8)?;
        let templates = datafusion::arrow::compute::cast(templates, &DataType::Utf8)?;
        let (texts, templates) = (texts.as_string::<i32>(), templates.as_string::<i32>());
        let function = if self.date { "to_date" } else { "to_timestamp" };
        let pg_error = |error: PgError| DataFusionError::External(Box::new(error));
        let mut dates = Date32Builder::with_capacity(texts.len());
        let mut timestamps = TimestampMicrosecondBuilder::with_capacity(texts.len());
        // The template is parsed again only when it changes.
        let mut parsed: Option<(&str, Vec<Node>)> = None;
        for row in 0..texts.len() {
            if texts.is_null(row) || templates.is_null(row) {
                dates.append_null();
                timestamps.append_null();
                continue;
            }
            let template = templates.value(row);
            if parsed.as_ref().is_none_or(|(last, _)| *last != template) {
                parsed = Some((
                    template,
                    parse_template(template, function).map_err(pg_error)?,
                ));
            }
            let nodes = parsed.as_ref().map_or(&[][..], |(_, nodes)| &nodes[..]);
            let text = texts.value(row);
            let (date, micros) = read(text, nodes).map_err(pg_error)?;
            let days = date.num_days_from_ce() - UNIX_EPOCH_DAYS;
            if self.date {
                dates.append_value(days);
                continue;
            }
            let local = i64::from(days)
                .checked_mul(86_400_000_000)
                .and_then(|midnight| midnight.checked_add(micros));
            let utc = local
                .and_then(|local| super::temporal::session_from_local(&zone, local))
                .filter(|_| date.year() <= 294_276)
                .ok_or_else(|| {
                    pg_error(PgError::new(
                        sqlstate::DATETIME_FIELD_OVERFLOW,
                        "timestamp out of range",
                    ))
                })?;
            timestamps.append_value(utc);
        }
        let array: ArrayRef = if self.date {
            Arc::new(dates.finish())
        } else {
            Arc::new(timestamps.finish().with_timezone("UTC"))
        };
        super::functions::columnar(array, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(text: &str, template: &str) -> String {
        let nodes = parse_template(template, "to_date").unwrap();
        read(text, &nodes).unwrap().0.to_string()
    }

    fn timestamp(text: &str, template: &str) -> String {
        let nodes = parse_template(template, "to_timestamp").unwrap();
        let (date, micros) = read(text, &nodes).unwrap();
        let time = chrono::NaiveTime::from_num_seconds_from_midnight_opt(
            (micros / 1_000_000) as u32,
            (micros % 1_000_000 * 1000) as u32,
        )
        .unwrap();
        format!("{date} {time}")
    }

    fn code(text: &str, template: &str) -> String {
        match parse_template(template, "to_date").and_then(|nodes| read(text, &nodes)) {
            Ok(value) => panic!("{text:?} {template:?} read as {value:?}"),
            Err(error) => error.code.to_string(),
        }
    }

    // Every expected value below is PostgreSQL 15's answer.

    #[test]
    fn dates_as_postgres_reads_them() {
        assert_eq!(date("2024-01-15", "YYYY-MM-DD"), "2024-01-15");
        assert_eq!(date("2024-1-5", "YYYY-MM-DD"), "2024-01-05");
        assert_eq!(date("20240115", "YYYYMMDD"), "2024-01-15");
        assert_eq!(date("15 Jan 2024", "DD Mon YYYY"), "2024-01-15");
        assert_eq!(date("January 15, 2024", "Month DD, YYYY"), "2024-01-15");
        assert_eq!(date("2024-01-15 junk", "YYYY-MM-DD"), "2024-01-15");
        assert_eq!(date("24-01-15", "YY-MM-DD"), "2024-01-15");
        assert_eq!(date("2024-01-15", "YYYY-MM"), "2024-01-01");
        assert_eq!(date("2024 - 01 - 15", "YYYY-MM-DD"), "2024-01-15");
        assert_eq!(date("2024-01-15", "YYYY MM DD"), "2024-01-15");
        assert_eq!(date("2024-100", "YYYY-DDD"), "2024-04-09");
        assert_eq!(date("15th Jan 2024", "DDth Mon YYYY"), "2024-01-15");
        assert_eq!(date("Mon 15 Jan 2024", "Dy DD Mon YYYY"), "2024-01-15");
        assert_eq!(date("2024Jan15", "YYYYMonDD"), "2024-01-15");
        assert_eq!(date("2024-01-15", "FMYYYY-FMMM-FMDD"), "2024-01-15");
        // Without a year: 1 BC (astronomical year 0).
        assert_eq!(date("01-15", "MM-DD"), "0000-01-15");
    }

    #[test]
    fn times_as_postgres_reads_them() {
        assert_eq!(
            timestamp("2024-01-15 10:30:05.25 PM", "YYYY-MM-DD HH:MI:SS.MS AM"),
            "2024-01-15 22:30:05.250"
        );
        assert_eq!(
            timestamp("2024-01-15T10:30:00", "YYYY-MM-DD\"T\"HH24:MI:SS"),
            "2024-01-15 10:30:00"
        );
        assert_eq!(
            timestamp(
                "2024-01-15 12:05:00.000123 am",
                "YYYY-MM-DD HH12:MI:SS.US pm"
            ),
            "2024-01-15 00:05:00.000123"
        );
    }

    #[test]
    fn errors_carry_postgres_codes() {
        assert_eq!(code("2024-02-30", "YYYY-MM-DD"), "22008");
        assert_eq!(code("2024/13/01", "YYYY/MM/DD"), "22008");
        assert_eq!(code("13:00 PM", "HH:MI PM"), "22007");
        assert_eq!(code("x2024-01-15", "YYYY-MM-DD"), "22007");
        assert_eq!(date("2024115", "YYYYMMDD"), "2024-11-05");
        assert_eq!(code("20241", "YYYYMMDD"), "22007");
        assert_eq!(code("2024a115", "YYYYMMDD"), "22007");
        assert_eq!(code("15 Foo 2024", "DD Mon YYYY"), "22007");
        assert_eq!(code("2024-05", "IYYY-IW"), "0A000");
    }
}
