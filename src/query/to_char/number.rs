//! `to_char` of a number (`smallint`, `integer`, `bigint`, `real`, `double
//! precision`, `numeric`) by PostgreSQL's number templates: `9` and `0`
//! digit positions, `.`/`D` decimal point, `,`/`G` group separator, `FM`
//! fill mode, the signs `S`, `MI`, `PL`, `SG` and `PR`, `L` currency, `V`
//! shift, `EEEE` scientific notation, `RN` Roman numerals, `TH` ordinal
//! suffixes and quoted literal text.
//!
//! Written by hand: no crate formats numbers by these (Oracle-derived)
//! templates, and reports and BI tools print amounts with them. The output
//! follows PostgreSQL's under the C locale (pgaccel's sessions run in it):
//! `.` decimal point, `,` group separator, a blank currency symbol. Its
//! quirks are kept on purpose, because a replica prints what its primary
//! prints: `FM9.99` prints `1.` for 1, `9.9` prints ` .5` for 0.5, a value
//! wider than the template prints `#` in every digit position, and a float
//! shows at most 15 significant digits (6 for `real`), the output ending
//! where its digits run out.

use datafusion::arrow::datatypes::i256;

use crate::query::{PgError, sqlstate};

/// A number to print.
#[derive(Debug, Clone, Copy)]
pub enum Number {
    /// `integer` (and `smallint`), as PostgreSQL's `int4_to_char`.
    Int4(i32),
    /// `bigint`.
    Int8(i64),
    /// `real`: at most 6 significant digits.
    Float4(f32),
    /// `double precision`: at most 15 significant digits.
    Float8(f64),
    /// `numeric`: `digits × 10^-scale`.
    Numeric { digits: i256, scale: u32 },
}

/// One element of a parsed template.
#[derive(Debug, Clone, PartialEq)]
enum Node {
    /// `9` (or `0`, which prints leading zeros).
    Digit {
        zero: bool,
    },
    /// `.` or `D`.
    Point,
    /// `,` or `G`.
    Group,
    Currency,
    Minus,
    Plus,
    BothSigns,
    Roman {
        lower: bool,
    },
    Ordinal {
        lower: bool,
    },
    Exponent,
    /// `S`, `PR`, `FM`, `V`, `B`, `C`, `SP`: they print nothing where they
    /// stand.
    Silent,
    Text(char),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum AnchoredSign {
    Before,
    After,
}

/// A parsed template: its nodes and PostgreSQL's description of the number.
#[derive(Debug, Clone, Default)]
pub struct Template {
    /// Shared, so that a copy made for each value is cheap.
    nodes: std::sync::Arc<Vec<Node>>,
    /// Digit positions before and after the decimal point.
    pre: usize,
    post: usize,
    /// Digit positions after `V`: the value is multiplied by 10^multi.
    multi: usize,
    /// The position of the first `0` before the decimal point.
    zero_start: Option<usize>,
    /// The number of digit positions up to the last `0`.
    zero_end: usize,
    point: bool,
    fill: bool,
    anchored: Option<AnchoredSign>,
    /// Digit positions before `S` when it stands before the number.
    pre_anchored: usize,
    brackets: bool,
    minus: bool,
    plus: bool,
    roman: bool,
    shift: bool,
    exponent: bool,
}

/// The keywords of a number template, longest first; each matches as
/// written here or all in lower case, as PostgreSQL's do.
const KEYWORDS: [&str; 20] = [
    "EEEE", "FM", "MI", "PL", "PR", "RN", "SG", "SP", "TH", ",", ".", "0", "9", "B", "C", "D", "G",
    "L", "S", "V",
];

fn syntax(message: impl Into<String>) -> PgError {
    PgError::new(sqlstate::SYNTAX_ERROR, message)
}

/// A template's text, parsed once for all the values printed by it.
pub fn parse(text: &str) -> Result<Template, PgError> {
    let mut template = Template::default();
    let chars: Vec<char> = text.chars().collect();
    let mut at = 0;
    while at < chars.len() {
        if chars[at] == '"' {
            // Quoted text is printed as written; a backslash quotes the
            // character after it.
            at += 1;
            while at < chars.len() && chars[at] != '"' {
                if chars[at] == '\\' && at + 1 < chars.len() {
                    at += 1;
                }
                std::sync::Arc::make_mut(&mut template.nodes).push(Node::Text(chars[at]));
                at += 1;
            }
            at += 1;
            continue;
        }
        let keyword = KEYWORDS.iter().find(|keyword| {
            let upper: Vec<char> = keyword.chars().collect();
            chars.len() - at >= upper.len()
                && (chars[at..at + upper.len()] == upper[..]
                    || chars[at..at + upper.len()]
                        .iter()
                        .zip(&upper)
                        .all(|(c, u)| *c == u.to_ascii_lowercase()))
        });
        let Some(keyword) = keyword else {
            std::sync::Arc::make_mut(&mut template.nodes).push(Node::Text(chars[at]));
            at += 1;
            continue;
        };
        let lower = chars[at].is_ascii_lowercase();
        at += keyword.len();
        template.describe(keyword, lower)?;
    }
    Ok(template)
}

impl Template {
    /// Adds one keyword, with PostgreSQL's checks of the combination.
    fn describe(&mut self, keyword: &str, lower: bool) -> Result<(), PgError> {
        if self.exponent && keyword != "EEEE" {
            return Err(syntax("\"EEEE\" must be the last pattern used"));
        }
        let node = match keyword {
            "9" | "0" => {
                if self.brackets {
                    return Err(syntax(format!("\"{keyword}\" must be ahead of \"PR\"")));
                }
                let zero = keyword == "0";
                if zero {
                    if self.zero_start.is_none() && !self.point {
                        self.zero_start = Some(self.pre);
                    }
                } else if self.shift {
                    self.multi += 1;
                }
                if self.point {
                    self.post += 1;
                } else if zero || !self.shift {
                    self.pre += 1;
                }
                if zero {
                    self.zero_end = self.pre + self.post;
                }
                Node::Digit { zero }
            }
            "." | "D" => {
                if self.point {
                    return Err(syntax("multiple decimal points"));
                }
                if self.shift {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                self.point = true;
                Node::Point
            }
            "," | "G" => Node::Group,
            "FM" => {
                self.fill = true;
                Node::Silent
            }
            "S" => {
                if self.anchored.is_some() {
                    return Err(syntax("cannot use \"S\" twice"));
                }
                if self.plus || self.minus || self.brackets {
                    return Err(syntax(
                        "cannot use \"S\" and \"PL\"/\"MI\"/\"SG\"/\"PR\" together",
                    ));
                }
                if self.point {
                    self.anchored = Some(AnchoredSign::After);
                } else {
                    self.anchored = Some(AnchoredSign::Before);
                    self.pre_anchored = self.pre;
                }
                Node::Silent
            }
            "MI" | "PL" | "SG" => {
                if self.anchored.is_some() {
                    return Err(syntax(format!(
                        "cannot use \"S\" and \"{keyword}\" together"
                    )));
                }
                match keyword {
                    "MI" => {
                        self.minus = true;
                        Node::Minus
                    }
                    "PL" => {
                        self.plus = true;
                        Node::Plus
                    }
                    _ => {
                        self.minus = true;
                        self.plus = true;
                        Node::BothSigns
                    }
                }
            }
            "PR" => {
                if self.anchored.is_some() || self.plus || self.minus {
                    return Err(syntax(
                        "cannot use \"PR\" and \"S\"/\"PL\"/\"MI\"/\"SG\" together",
                    ));
                }
                self.brackets = true;
                Node::Silent
            }
            "RN" => {
                self.roman = true;
                Node::Roman { lower }
            }
            "TH" => Node::Ordinal { lower },
            "L" => Node::Currency,
            "V" => {
                if self.point {
                    return Err(syntax("cannot use \"V\" and decimal point together"));
                }
                self.shift = true;
                Node::Silent
            }
            "EEEE" => {
                if self.exponent {
                    return Err(syntax("cannot use \"EEEE\" twice"));
                }
                if self.fill
                    || self.anchored.is_some()
                    || self.brackets
                    || self.minus
                    || self.plus
                    || self.roman
                    || self.shift
                {
                    return Err(syntax("\"EEEE\" is incompatible with other formats").with_detail(
                        "\"EEEE\" may only be used together with digit and decimal point patterns.",
                    ));
                }
                self.exponent = true;
                Node::Exponent
            }
            // B, C and SP are accepted and print nothing.
            _ => Node::Silent,
        };
        std::sync::Arc::make_mut(&mut self.nodes).push(node);
        Ok(())
    }
}

/// `value` printed by `template`, as PostgreSQL's `to_char` prints it.
pub fn render(template: &Template, value: Number) -> Result<String, PgError> {
    let mut template = template.clone();
    if template.roman {
        let roman = roman_numeral(value)?;
        return Printer::new(&template, roman.into_bytes(), 0, None).print();
    }
    if template.exponent {
        return scientific(value, template.post);
    }
    if template.shift {
        template.pre += template.multi;
    }
    let (sign, mut digits) = match value {
        Number::Int4(value) => {
            let shifted = if template.shift {
                10i32
                    .checked_pow(template.multi as u32)
                    .and_then(|factor| value.checked_mul(factor))
                    .ok_or_else(integer_out_of_range)?
            } else {
                value
            };
            integer_digits(i64::from(shifted), template.post)
        }
        Number::Int8(value) => {
            let shifted = if template.shift {
                10i64
                    .checked_pow(template.multi as u32)
                    .and_then(|factor| value.checked_mul(factor))
                    .ok_or_else(|| {
                        PgError::new(sqlstate::NUMERIC_OUT_OF_RANGE, "bigint out of range")
                    })?
            } else {
                value
            };
            integer_digits(shifted, template.post)
        }
        // `V` multiplies in the value's own precision.
        Number::Float4(value) => {
            let shifted = if template.shift {
                value * 10f32.powi(template.multi as i32)
            } else {
                value
            };
            float_digits(f64::from(shifted), 6, &mut template)
        }
        Number::Float8(value) => {
            let shifted = if template.shift {
                value * 10f64.powi(template.multi as i32)
            } else {
                value
            };
            float_digits(shifted, 15, &mut template)
        }
        Number::Numeric { digits, scale } => {
            // × 10^multi: fewer decimals, or more digits once none are left.
            let multi = template.multi as u32;
            let (digits, scale) = if !template.shift || scale >= multi {
                (digits, scale - if template.shift { multi } else { 0 })
            } else {
                let factor = ten_to(multi - scale).ok_or_else(out_of_range)?;
                (digits.checked_mul(factor).ok_or_else(out_of_range)?, 0)
            };
            let text = numeric_text(digits, scale, template.post as u32)?;
            match text.strip_prefix('-') {
                Some(magnitude) => ('-', magnitude.as_bytes().to_vec()),
                None => ('+', text.into_bytes()),
            }
        }
    };
    let integer_width = digits
        .iter()
        .position(|&b| b == b'.')
        .unwrap_or(digits.len());
    let mut blank_positions = 0;
    if integer_width < template.pre {
        blank_positions = template.pre - integer_width;
    } else if integer_width > template.pre {
        digits = overflow(template.pre, template.post);
    }
    Printer::new(&template, digits, blank_positions, Some(sign)).print()
}

fn out_of_range() -> PgError {
    PgError::new(
        sqlstate::NUMERIC_OUT_OF_RANGE,
        "value overflows numeric format",
    )
}

fn integer_out_of_range() -> PgError {
    PgError::new(sqlstate::NUMERIC_OUT_OF_RANGE, "integer out of range")
}

fn ten_to(power: u32) -> Option<i256> {
    i256::from_i128(10).checked_pow(power)
}

/// `#` in every digit position: the value does not fit the template.
fn overflow(pre: usize, post: usize) -> Vec<u8> {
    let mut digits = vec![b'#'; pre + post + 1];
    digits[pre] = b'.';
    digits
}

/// The magnitude of an integer with `post` zero decimals, and its sign.
fn integer_digits(value: i64, post: usize) -> (char, Vec<u8>) {
    let sign = if value < 0 { '-' } else { '+' };
    let mut digits = value.unsigned_abs().to_string();
    if post > 0 {
        digits.push('.');
        digits.extend(std::iter::repeat_n('0', post));
    }
    (sign, digits.into_bytes())
}

/// The magnitude of a float with at most `significant` digits in all
/// (fewer decimals than the template asks for when the integer part is
/// long), and its sign. NaN and the infinities are printed as the words
/// PostgreSQL prints, so they fill the digit positions like digits would.
fn float_digits(value: f64, significant: usize, template: &mut Template) -> (char, Vec<u8>) {
    let text = |value: f64, decimals: usize| {
        if value.is_nan() {
            "NaN".to_owned()
        } else if value.is_infinite() {
            if value > 0.0 { "Infinity" } else { "-Infinity" }.to_owned()
        } else {
            format!("{value:.decimals$}")
        }
    };
    let integer_width = text(value.abs(), 0).len();
    if integer_width >= significant {
        template.post = 0;
    } else if integer_width + template.post > significant {
        template.post = significant - integer_width;
    }
    let text = text(value, template.post);
    match text.strip_prefix('-') {
        Some(magnitude) => ('-', magnitude.as_bytes().to_vec()),
        None => ('+', text.into_bytes()),
    }
}

/// PostgreSQL's text of `digits × 10^-scale` rounded half away from zero
/// to `decimals` decimals.
fn numeric_text(digits: i256, scale: u32, decimals: u32) -> Result<String, PgError> {
    let rounded = if decimals < scale {
        let divisor = ten_to(scale - decimals).ok_or_else(out_of_range)?;
        let quotient = digits.wrapping_div(divisor);
        let remainder = digits.wrapping_rem(divisor).wrapping_abs();
        if remainder.wrapping_mul(i256::from_i128(2)) >= divisor {
            if digits.is_negative() {
                quotient.wrapping_sub(i256::ONE)
            } else {
                quotient.wrapping_add(i256::ONE)
            }
        } else {
            quotient
        }
    } else {
        ten_to(decimals - scale)
            .and_then(|factor| digits.checked_mul(factor))
            .ok_or_else(out_of_range)?
    };
    let magnitude = rounded.wrapping_abs().to_string();
    let decimals = decimals as usize;
    let padded = format!("{magnitude:0>width$}", width = decimals + 1);
    let (integer, fraction) = padded.split_at(padded.len() - decimals);
    let sign = if rounded.is_negative() { "-" } else { "" };
    Ok(if fraction.is_empty() {
        format!("{sign}{integer}")
    } else {
        format!("{sign}{integer}.{fraction}")
    })
}

/// `EEEE`: a mantissa with `post` decimals and a signed two-digit (or
/// longer) exponent; a blank stands where a positive value has no sign.
fn scientific(value: Number, post: usize) -> Result<String, PgError> {
    let float = |value: f64| {
        if !value.is_finite() {
            let mut text = vec![b'#'; post + 7];
            text[0] = b' ';
            text[2] = b'.';
            return String::from_utf8(text).unwrap_or_default();
        }
        let text = format!("{value:.post$e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let exponent: i32 = exponent.parse().unwrap_or(0);
        let sign = if mantissa.starts_with('-') { "" } else { " " };
        format!("{sign}{mantissa}e{exponent:+03}")
    };
    match value {
        Number::Int4(value) => Ok(float(f64::from(value))),
        Number::Float4(value) => Ok(float(f64::from(value))),
        Number::Float8(value) => Ok(float(value)),
        Number::Int8(value) => numeric_scientific(i256::from_i128(i128::from(value)), 0, post),
        Number::Numeric { digits, scale } => numeric_scientific(digits, scale, post),
    }
}

/// PostgreSQL's `numeric_out_sci`: the exponent is that of the first
/// significant digit and is not adjusted when rounding carries the
/// mantissa to 10 (9.99 prints `10.0e+00` with one decimal).
fn numeric_scientific(digits: i256, scale: u32, post: usize) -> Result<String, PgError> {
    let exponent = match digits.wrapping_abs().checked_ilog10() {
        Some(log) if digits != i256::ZERO => log as i32 - scale as i32,
        _ => 0,
    };
    // The mantissa is digits × 10^-(scale + exponent).
    let mantissa_scale = scale as i64 + i64::from(exponent);
    let (digits, mantissa_scale) = if mantissa_scale < 0 {
        let factor = ten_to(mantissa_scale.unsigned_abs() as u32).ok_or_else(out_of_range)?;
        (digits.checked_mul(factor).ok_or_else(out_of_range)?, 0u32)
    } else {
        (digits, mantissa_scale as u32)
    };
    let mantissa = numeric_text(digits, mantissa_scale, post as u32)?;
    let sign = if mantissa.starts_with('-') { "" } else { " " };
    Ok(format!("{sign}{mantissa}e{exponent:+03}"))
}

/// `RN`: the value rounded to an integer in Roman numerals, or 15 `#` when
/// it is not between 1 and 3999. A `bigint` or `numeric` beyond `integer`
/// is an error, as in PostgreSQL 15.
fn roman_numeral(value: Number) -> Result<String, PgError> {
    let integer: Option<i64> = match value {
        Number::Int4(value) => Some(i64::from(value)),
        Number::Int8(value) => Some(i64::from(
            i32::try_from(value).map_err(|_| integer_out_of_range())?,
        )),
        Number::Float4(value) => Some(f64::from(value))
            .filter(|value| value.is_finite())
            .map(|value| value.round_ties_even() as i64),
        Number::Float8(value) => Some(value)
            .filter(|value| value.is_finite())
            .map(|value| value.round_ties_even() as i64),
        Number::Numeric { digits, scale } => {
            let text = numeric_text(digits, scale, 0)?;
            let value = text.parse::<i32>().map_err(|_| integer_out_of_range())?;
            Some(i64::from(value))
        }
    };
    let Some(number @ 1..=3999) = integer else {
        return Ok("#".repeat(15));
    };
    const ONES: [&str; 10] = ["", "I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX"];
    const TENS: [&str; 10] = ["", "X", "XX", "XXX", "XL", "L", "LX", "LXX", "LXXX", "XC"];
    const HUNDREDS: [&str; 10] = ["", "C", "CC", "CCC", "CD", "D", "DC", "DCC", "DCCC", "CM"];
    let number = number as usize;
    Ok(format!(
        "{}{}{}{}",
        "M".repeat(number / 1000),
        HUNDREDS[number / 100 % 10],
        TENS[number / 10 % 10],
        ONES[number % 10]
    ))
}

/// Walks the template over the digits of the value, as PostgreSQL does: a
/// digit position prints a blank (or a `0` from the first `0` on) until the
/// value's own digits begin, the sign goes just before the first digit
/// printed, and fill mode drops blanks and trailing zero decimals.
struct Printer<'a> {
    template: &'a Template,
    digits: Vec<u8>,
    /// Digit positions before the value's first digit.
    blank_positions: usize,
    /// `+`, `-`, or none for Roman numerals.
    sign: Option<char>,
    sign_written: bool,
    brackets: bool,
    anchored: Option<AnchoredSign>,
    /// The next digit of `digits` to print.
    next: usize,
    /// The numeric position (digit or decimal point) being printed.
    position: usize,
    /// The index of the last position counted for the closing sign.
    last_position: usize,
    /// In fill mode, the last decimal digit worth printing.
    last_relevant: Option<usize>,
    /// Whether the position before printed a digit (for group separators).
    in_number: bool,
    out: String,
}

impl<'a> Printer<'a> {
    fn new(
        template: &'a Template,
        digits: Vec<u8>,
        blank_positions: usize,
        sign: Option<char>,
    ) -> Self {
        let mut printer = Printer {
            template,
            digits,
            blank_positions,
            sign,
            sign_written: false,
            brackets: template.brackets,
            anchored: template.anchored,
            next: 0,
            position: 0,
            last_position: 0,
            last_relevant: None,
            in_number: false,
            out: String::new(),
        };
        let (pre, post) = if template.roman {
            printer.anchored = None;
            printer.blank_positions = 0;
            (0, 0)
        } else {
            (template.pre, template.post)
        };
        let signed_apart = !template.roman && (template.plus || template.minus);
        if signed_apart {
            // MI/PL/SG print the sign themselves; a lone PL still lets the
            // number carry a minus.
            printer.sign_written = !template.plus || template.minus;
        } else {
            if sign != Some('-') && template.fill {
                printer.brackets = false;
            }
            printer.sign_written = sign == Some('+') && template.fill && printer.anchored.is_none();
            if printer.anchored == Some(AnchoredSign::Before) && pre == template.pre_anchored {
                printer.anchored = Some(AnchoredSign::After);
            }
        }
        // PostgreSQL counts positions from pre + post - 1, one more when
        // the sign is still to be written at the first position.
        let mut count = (pre + post) as isize - 1;
        if template.fill && template.point && !template.roman {
            printer.last_relevant = printer.last_relevant_decimal();
        }
        if !printer.sign_written && printer.blank_positions == 0 {
            count += 1;
        }
        let count = count
            + isize::from(printer.blank_positions > 0)
            + isize::from(template.point && !template.roman);
        printer.last_position = count.max(0) as usize;
        printer
    }

    /// The last decimal digit that is not a trailing zero (the point itself
    /// when all are zero), kept at least as far as the template's last `0`.
    fn last_relevant_decimal(&self) -> Option<usize> {
        let point = self.digits.iter().position(|&b| b == b'.')?;
        let mut last = point;
        for (at, &digit) in self.digits.iter().enumerate().skip(point + 1) {
            if digit != b'0' {
                last = at;
            }
        }
        if self.template.zero_end > self.blank_positions && !self.digits.is_empty() {
            let last_zero =
                (self.digits.len() - 1).min(self.template.zero_end - self.blank_positions);
            last = last.max(last_zero);
        }
        Some(last)
    }

    fn current(&self) -> u8 {
        self.digits.get(self.next).copied().unwrap_or(0)
    }

    fn last_relevant_is_point(&self) -> bool {
        self.last_relevant
            .is_some_and(|at| self.digits.get(at) == Some(&b'.'))
    }

    /// A lone `0` before the decimal point prints as a blank (` .5`).
    fn blank_zero(&self) -> bool {
        self.template.zero_start.is_none()
            && self.next == 0
            && self.digits.first() == Some(&b'0')
            && self.template.post != 0
    }

    fn push(&mut self, c: char) {
        self.out.push(c);
    }

    fn numeric_position(&mut self, zero_digit: bool) {
        if self.template.roman {
            return;
        }
        self.in_number = false;
        let fill = self.template.fill;
        let at_zeros = self.template.zero_start == Some(self.position);
        if !self.sign_written
            && (self.position >= self.blank_positions || at_zeros)
            && (!self.blank_zero() || self.last_relevant_is_point())
        {
            let sign = self.sign.unwrap_or('\0');
            if let Some(anchored) = self.anchored {
                if anchored == AnchoredSign::Before {
                    self.push(if sign == '-' { '-' } else { '+' });
                    self.sign_written = true;
                }
            } else if self.brackets {
                self.push(if sign == '+' { ' ' } else { '<' });
                self.sign_written = true;
            } else if sign == '+' {
                if !fill {
                    self.push(' ');
                }
                self.sign_written = true;
            } else if sign == '-' {
                self.push('-');
                self.sign_written = true;
            }
        }
        let zeros_from = self.template.zero_start;
        if self.position < self.blank_positions
            && zeros_from.is_none_or(|start| start > self.position)
        {
            if !fill {
                self.push(' ');
            }
        } else if self.position < self.blank_positions {
            self.push('0');
            self.in_number = true;
        } else {
            let current = self.current();
            if current == b'.' {
                self.push('.');
            } else if self
                .last_relevant
                .is_some_and(|last| self.next > last && !zero_digit)
            {
                // A trailing zero decimal in fill mode.
            } else if self.blank_zero() {
                if !fill {
                    self.push(' ');
                } else if self.last_relevant_is_point() {
                    self.push('0');
                }
            } else {
                // Past the last digit this writes the end of the string, as
                // PostgreSQL does: the output stops there.
                self.push(current as char);
                self.in_number = true;
            }
            if self.next < self.digits.len() {
                self.next += 1;
            }
        }
        let mut last = self.last_position;
        if self.last_relevant == Some(self.next) {
            last = self.position;
        }
        if self.position + 1 == last {
            let sign = self.sign.unwrap_or('\0');
            if self.sign_written && self.brackets {
                self.push(if sign == '+' { ' ' } else { '>' });
            } else if self.anchored == Some(AnchoredSign::After) {
                self.push(if sign == '-' { '-' } else { '+' });
            }
        }
        self.position += 1;
    }

    fn print(mut self) -> Result<String, PgError> {
        let fill = self.template.fill;
        let sign = self.sign.unwrap_or('\0');
        for node in self.template.nodes.clone().iter().cloned() {
            match node {
                Node::Digit { zero } => self.numeric_position(zero),
                Node::Point => self.numeric_position(false),
                Node::Group => {
                    if self.in_number {
                        self.push(',');
                    } else if !fill {
                        self.push(' ');
                    }
                }
                Node::Currency => self.push(' '),
                Node::Roman { lower } => {
                    let numeral = String::from_utf8_lossy(&self.digits).into_owned();
                    let numeral = if lower {
                        numeral.to_ascii_lowercase()
                    } else {
                        numeral
                    };
                    if fill {
                        self.out.push_str(&numeral);
                    } else {
                        self.out.push_str(&format!("{numeral:>15}"));
                    }
                }
                Node::Ordinal { lower } => {
                    if self.template.roman
                        || self.digits.first() == Some(&b'#')
                        || sign == '-'
                        || self.template.point
                    {
                        continue;
                    }
                    let suffix = ordinal(&self.digits)?;
                    self.out.push_str(&if lower {
                        suffix.to_ascii_lowercase()
                    } else {
                        suffix.to_owned()
                    });
                }
                Node::Minus => {
                    if sign == '-' {
                        self.push('-');
                    } else if !fill {
                        self.push(' ');
                    }
                }
                Node::Plus => {
                    if sign == '+' {
                        self.push('+');
                    } else if !fill {
                        self.push(' ');
                    }
                }
                Node::BothSigns => self.push(sign),
                Node::Text(c) => self.push(c),
                Node::Exponent | Node::Silent => {}
            }
        }
        Ok(match self.out.find('\0') {
            Some(end) => self.out[..end].to_owned(),
            None => self.out,
        })
    }
}

/// The English ordinal suffix of the integer in `digits`; an error when
/// they do not end in a digit (a template without digit positions).
fn ordinal(digits: &[u8]) -> Result<&'static str, PgError> {
    let Some(last) = digits.last().copied().filter(u8::is_ascii_digit) else {
        return Err(PgError::new(
            sqlstate::INVALID_TEXT_REPRESENTATION,
            format!("\"{}\" is not a number", String::from_utf8_lossy(digits)),
        ));
    };
    let tens = digits.len() > 1 && digits[digits.len() - 2] == b'1';
    Ok(match last {
        _ if tens => "TH",
        b'1' => "ST",
        b'2' => "ND",
        b'3' => "RD",
        _ => "TH",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(text: &str) -> Number {
        let (integer, fraction) = text.split_once('.').unwrap_or((text, ""));
        let digits: i128 = format!("{integer}{fraction}").parse().unwrap();
        Number::Numeric {
            digits: i256::from_i128(digits),
            scale: fraction.len() as u32,
        }
    }

    #[test]
    fn numbers_print_as_postgresql_prints_them() {
        // Each expectation was printed by PostgreSQL 15.
        let cases = [
            (numeric("-12"), "MI9999", "-  12"),
            (numeric("-12"), "S9999", "  -12"),
            (numeric("1"), "FM999.99", "1."),
            (numeric("0.5"), "999.99", "    .50"),
            (numeric("12345"), "999", " ###"),
            (numeric("5"), "909", "  05"),
            (numeric("1234.5"), "9.99EEEE", " 1.23e+03"),
            (numeric("-12"), "999PR", " <12>"),
            (numeric("12"), "L99", "  12"),
            (numeric("485"), "RN", "        CDLXXXV"),
            (numeric("12.45"), "99V9", " 125"),
            (numeric("21"), "99th", " 21st"),
            (
                Number::Float8(0.1),
                "0.99999999999999999999",
                " 0.10000000000000",
            ),
            (Number::Float8(-0.0), "9.9", " -.0"),
            (Number::Float8(f64::INFINITY), "999.9", " ###.#"),
            (numeric("1234567"), "9G999G999D99", " 1,234,567.00"),
            (numeric("9.99"), "9.9EEEE", " 10.0e+00"),
            (Number::Float8(9.99), "9.9EEEE", " 1.0e+01"),
            (numeric("-0.001"), "9.99EEEE", "-1.00e-03"),
            (numeric("-0.5"), "999.9PR", "   <.5>"),
            (numeric("-0.5"), "99.99S", "  .50-"),
            (Number::Int4(5), "9V00", "  05"),
            (Number::Int4(5), "PL999", "+   5"),
            (Number::Int4(5), "RN,", "              V "),
            (Number::Int4(5), "\"ab\"9", "ab 5"),
            (Number::Int4(0), "FM9.99", "0."),
            (
                Number::Float8(1e15),
                "9999999999999999.99",
                " 1000000000000000",
            ),
        ];
        for (value, template, expected) in cases {
            assert_eq!(
                render(&parse(template).unwrap(), value).unwrap(),
                expected,
                "to_char({value:?}, {template:?})"
            );
        }
    }

    #[test]
    fn bad_templates_are_refused_with_postgresql_s_messages() {
        for (template, message) in [
            ("99.9.9", "multiple decimal points"),
            ("9V.9", "cannot use \"V\" and decimal point together"),
            ("PR9", "\"9\" must be ahead of \"PR\""),
            ("S9MI", "cannot use \"S\" and \"MI\" together"),
            ("9EEEE9", "\"EEEE\" must be the last pattern used"),
        ] {
            let error = parse(template)
                .and_then(|template| render(&template, Number::Int4(5)))
                .unwrap_err();
            assert_eq!(error.code, sqlstate::SYNTAX_ERROR);
            assert_eq!(error.message, message);
        }
    }
}
