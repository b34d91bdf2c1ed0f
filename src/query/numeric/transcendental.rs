//! `sqrt`, `exp`, `ln`, `log`, `log10` and `power` of numerics as
//! PostgreSQL computes them: in numeric, at the result scale PostgreSQL
//! picks for each function (at least 16 significant digits, never fewer
//! decimals than an argument shows), rounded half away from zero.
//! `sqrt(2.0)` is `1.414213562373095`, `ln(2.0)` `0.6931471805599453`,
//! `power(2.5, 2)` `6.2500000000000000`.
//!
//! A square root and an integer power are exact before the one rounding.
//! Logarithms and exponentials are computed in big-integer fixed point with
//! 25 guard digits past the result's last one, so the rounded result is the
//! exact value's unless that value lies within 10^-25 of its last digit's
//! rounding boundary. No crate computes PostgreSQL's result scales; the
//! integers are `num-bigint`'s, which DataFusion already builds.

use num_bigint::{BigInt, Sign};

use super::*;

/// Digits past the result's last one that a logarithm or exponential is
/// computed with.
const GUARD: u32 = 25;
/// PostgreSQL's `log10(e)` and `ln(10)` as its C source writes them: the
/// result scales truncate products with them, so the last bit matters.
#[allow(clippy::approx_constant)]
const LOG10_E: f64 = 0.434294481903252;
#[allow(clippy::approx_constant)]
const LN_10: f64 = 2.302585092994046;
/// PostgreSQL's `NUMERIC_MAX_RESULT_SCALE`.
const MAX_RESULT_SCALE: f64 = 2000.0;
/// The largest integer power computed, in bits of the result: beyond it a
/// result would not fit a numeric of pgaccel's anyway.
const POWER_BITS: u64 = 1 << 20;

/// The functions computed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Kind {
    Sqrt,
    Exp,
    Ln,
    /// `log(x)` and `log10(x)`: PostgreSQL's `log(10, x)`.
    Log10,
    /// `log(b, x)`.
    Log,
    Power,
}

impl Kind {
    pub(super) const ALL: [Kind; 6] = [
        Kind::Sqrt,
        Kind::Exp,
        Kind::Ln,
        Kind::Log10,
        Kind::Log,
        Kind::Power,
    ];

    /// The kind DataFusion's function `name` with `arity` arguments is.
    pub(super) fn of(name: &str, arity: usize) -> Option<Kind> {
        Some(match (name, arity) {
            ("sqrt", 1) => Kind::Sqrt,
            ("exp", 1) => Kind::Exp,
            ("ln", 1) => Kind::Ln,
            ("log" | "log10", 1) => Kind::Log10,
            ("log", 2) => Kind::Log,
            ("power" | "pow", 2) => Kind::Power,
            _ => return None,
        })
    }

    /// The kind whose function (or its `_scale` twin) is named `name`.
    pub(super) fn named(name: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|kind| kind.name(false) == name || kind.name(true) == name)
    }

    pub(super) fn name(self, scale_only: bool) -> &'static str {
        match (self, scale_only) {
            (Kind::Sqrt, false) => "pgaccel_numeric_sqrt",
            (Kind::Sqrt, true) => "pgaccel_numeric_sqrt_scale",
            (Kind::Exp, false) => "pgaccel_numeric_exp",
            (Kind::Exp, true) => "pgaccel_numeric_exp_scale",
            (Kind::Ln, false) => "pgaccel_numeric_ln",
            (Kind::Ln, true) => "pgaccel_numeric_ln_scale",
            (Kind::Log10, false) => "pgaccel_numeric_log10",
            (Kind::Log10, true) => "pgaccel_numeric_log10_scale",
            (Kind::Log, false) => "pgaccel_numeric_log",
            (Kind::Log, true) => "pgaccel_numeric_log_scale",
            (Kind::Power, false) => "pgaccel_numeric_power",
            (Kind::Power, true) => "pgaccel_numeric_power_scale",
        }
    }

    fn arity(self) -> usize {
        match self {
            Kind::Log | Kind::Power => 2,
            _ => 1,
        }
    }
}

/// The function of `kind` (or its `_scale` twin), called with its
/// arguments followed by their display scales, as [`DYNAMIC`] values (or
/// their display scales).
pub(super) fn udf(kind: Kind, scale_only: bool) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::new_from_impl(Transcendental {
        signature: Signature::any(kind.arity() * 2, Volatility::Immutable),
        kind,
        scale_only,
    }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Transcendental {
    signature: Signature,
    kind: Kind,
    scale_only: bool,
}

impl ScalarUDFImpl for Transcendental {
    fn name(&self) -> &str {
        self.kind.name(self.scale_only)
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _arg_types: &[DataType]) -> Result<DataType> {
        Ok(value_or_scale_type(self.scale_only))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let (arrays, scalar) = arrays(&args)?;
        let arity = self.kind.arity();
        let rows = arrays[0].len();
        let mut values = Decimal256Builder::with_capacity(rows);
        let mut scales = Int32Builder::with_capacity(rows);
        let mut operands = Vec::with_capacity(arity);
        for row in 0..rows {
            operands.clear();
            for argument in 0..arity {
                let value = number_at(&arrays[argument], row)
                    .zip(scale_at(&arrays[arity + argument], row).map(|scale| scale.max(0) as u32));
                match value.and_then(|(number, display)| Decimal::of(number, display)) {
                    Some(decimal) => operands.push(decimal),
                    None => break,
                }
            }
            if operands.len() < arity {
                values.append_null();
                scales.append_null();
                continue;
            }
            let (value, scale) = evaluate(self.kind, &operands, self.scale_only)?;
            scales.append_value(scale as i32);
            if !self.scale_only {
                values.append_value(to_dynamic(value, scale)?);
            }
        }
        finish(values_or_scales(values, scales, self.scale_only)?, scalar)
    }
}

/// A numeric value at its display scale: `digits × 10^-scale`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Decimal {
    digits: BigInt,
    scale: u32,
}

impl Decimal {
    fn of(number: Number, display: u32) -> Option<Decimal> {
        let digits = at_display_scale(number, display)?;
        Some(Decimal {
            digits: BigInt::from_signed_bytes_le(&digits.to_le_bytes()),
            scale: display,
        })
    }

    fn sign(&self) -> Sign {
        self.digits.sign()
    }

    /// The nearest double, as PostgreSQL's `numericvar_to_double` reads it.
    fn to_f64(&self) -> f64 {
        format!("{}e-{}", self.digits, self.scale)
            .parse()
            .unwrap_or_default()
    }

    /// The value at `scale` decimals, rounded half away from zero.
    fn at(&self, scale: u32) -> BigInt {
        rescale(&self.digits, self.scale, scale)
    }

    /// The weight and digits of the value's magnitude in PostgreSQL's
    /// base-10000 form: `(weight, first digit, second digit)`, the second
    /// `None` when no non-zero digit follows the first; `None` for zero.
    fn base_10000(&self) -> Option<(i32, u32, Option<u32>)> {
        let magnitude = BigInt::from(self.digits.magnitude().clone());
        if magnitude.sign() == Sign::NoSign {
            return None;
        }
        let exponent = magnitude.to_string().len() as i32 - 1 - self.scale as i32;
        let weight = exponent.div_euclid(4);
        // |value| / 10000^weight, and the digits past its integer part.
        let shift = self.scale as i32 + 4 * weight;
        let digit_at = |shift: i32| -> BigInt {
            if shift >= 0 {
                &magnitude / ten(shift as u32)
            } else {
                &magnitude * ten(shift.unsigned_abs())
            }
        };
        let first = digit_at(shift);
        let whole = digit_at(shift - 4);
        let second = &whole - &first * 10_000u32;
        let rest = if shift > 4 {
            &magnitude % ten((shift - 4) as u32)
        } else {
            BigInt::ZERO
        };
        let more = second.sign() != Sign::NoSign || rest.sign() != Sign::NoSign;
        let small = |n: &BigInt| u32::try_from(n).unwrap_or(0);
        Some((weight, small(&first), more.then(|| small(&second))))
    }
}

fn ten(power: u32) -> BigInt {
    BigInt::from(10u32).pow(power)
}

/// `numerator / denominator` rounded half away from zero.
fn round_div(numerator: &BigInt, denominator: &BigInt) -> BigInt {
    let quotient = numerator / denominator;
    let remainder = numerator - &quotient * denominator;
    if remainder.magnitude() * 2u32 >= *denominator.magnitude() {
        if (numerator.sign() == Sign::Minus) != (denominator.sign() == Sign::Minus) {
            quotient - 1
        } else {
            quotient + 1
        }
    } else {
        quotient
    }
}

/// `digits` at `from` decimals as digits at `to`, rounded half away from
/// zero.
fn rescale(digits: &BigInt, from: u32, to: u32) -> BigInt {
    if to >= from {
        digits * ten(to - from)
    } else {
        round_div(digits, &ten(from - to))
    }
}

/// PostgreSQL's `NUMERIC_MIN_SIG_DIGITS - weight`, never below any of
/// `scales` nor 0 and at most `NUMERIC_MAX_DISPLAY_SCALE`.
fn result_scale(weight: i32, scales: &[u32]) -> u32 {
    scales
        .iter()
        .fold(MIN_SIG_DIGITS.saturating_sub(weight), |scale, s| {
            scale.max(*s as i32)
        })
        .clamp(0, MAX_DISPLAY_SCALE) as u32
}

fn domain_error(code: &'static str, message: &str) -> DataFusionError {
    DataFusionError::External(Box::new(PgError::new(code, message)))
}

/// PostgreSQL's `estimate_ln_dweight`: the decimal weight of `ln(value)`.
fn ln_weight(value: &Decimal) -> i32 {
    if value.sign() != Sign::Plus {
        return 0;
    }
    let (near_low, near_high) = (BigInt::from(9u32), BigInt::from(11u32));
    let tenths = value.digits.clone() * 10u32;
    let unit = ten(value.scale);
    if tenths >= &near_low * &unit && tenths <= &near_high * &unit {
        // ln(1 + x) ≈ x near 1: the weight of x's first decimal digit.
        let x = Decimal {
            digits: &value.digits - &unit,
            scale: value.scale,
        };
        return match x.base_10000() {
            Some((weight, first, _)) => weight * 4 + (f64::from(first)).log10() as i32,
            None => 0,
        };
    }
    let Some((weight, first, second)) = value.base_10000() else {
        return 0;
    };
    let (digits, decimal_weight) = match second {
        Some(second) => (first * 10_000 + second, weight * 4 - 4),
        None => (first, weight * 4),
    };
    let ln = f64::from(digits).ln() + f64::from(decimal_weight) * LN_10;
    ln.abs().log10() as i32
}

/// `e^x` for `x` at `scale` decimals, at `scale` decimals (within a few
/// units of the last).
fn exp_fixed(x: &BigInt, scale: u32) -> BigInt {
    let one = ten(scale);
    if x.sign() == Sign::Minus {
        let positive = exp_fixed(&-x, scale);
        return &one * &one / positive;
    }
    // e^x = (e^(x / 2^k))^(2^k) with x / 2^k below ½, where the series
    // converges by a digit a term.
    let half = &one / 2u32;
    let mut reduced = x.clone();
    let mut halvings = 0u32;
    while reduced > half {
        reduced /= 2u32;
        halvings += 1;
    }
    let mut sum = one.clone();
    let mut term = one.clone();
    for k in 1u32.. {
        term = &term * &reduced / &one / k;
        if term.sign() == Sign::NoSign {
            break;
        }
        sum += &term;
    }
    for _ in 0..halvings {
        sum = &sum * &sum / &one;
    }
    sum
}

/// `ln(y)` for a positive `y` at `scale` decimals, at `scale` decimals.
fn ln_fixed(y: BigInt, scale: u32) -> BigInt {
    let one = ten(scale);
    // ln(y) = 2^k ln(y^(1/2^k)), with the root between 0.9 and 1.1.
    let (low, high) = (&one * 9u32 / 10u32, &one * 11u32 / 10u32);
    let mut root = y;
    let mut roots = 0u32;
    while root < low || root > high {
        root = (&root * &one).sqrt();
        roots += 1;
    }
    // ln(r) = 2 atanh(z) = 2 (z + z³/3 + z⁵/5 + …), z = (r - 1) / (r + 1).
    let z = (&root - &one) * &one / (&root + &one);
    let z_squared = &z * &z / &one;
    let mut power = z.clone();
    let mut sum = z;
    for k in (3u32..).step_by(2) {
        power = &power * &z_squared / &one;
        let term = &power / k;
        if term.sign() == Sign::NoSign {
            break;
        }
        sum += term;
    }
    sum * 2u32 * (BigInt::from(1u32) << roots)
}

/// `ln(value)` of a positive value, at `scale` decimals: `ln(m) + k ln(10)`
/// with `value = m × 10^k` and `1 ≤ m < 10` (exact).
fn ln_of(value: &Decimal, scale: u32) -> BigInt {
    let length = value.digits.to_string().len() as i64;
    let exponent = length - 1 - i64::from(value.scale);
    // m at `scale` decimals.
    let shift = i64::from(scale) - (length - 1);
    let mantissa = if shift >= 0 {
        &value.digits * ten(shift as u32)
    } else {
        &value.digits / ten(shift.unsigned_abs() as u32)
    };
    let ln_mantissa = ln_fixed(mantissa, scale);
    if exponent == 0 {
        return ln_mantissa;
    }
    ln_mantissa + ln_10(scale) * exponent
}

/// `ln(10)` at `scale` decimals, computed once a thread for the scale last
/// asked for (every row of a column asks for the same).
fn ln_10(scale: u32) -> BigInt {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(u32, BigInt)>> = const { std::cell::RefCell::new(None) };
    }
    LAST.with_borrow_mut(|last| match last {
        Some((at, value)) if *at == scale => value.clone(),
        _ => {
            let value = ln_fixed(ten(scale + 1), scale);
            *last = Some((scale, value.clone()));
            value
        }
    })
}

/// The error of a logarithm's argument that is not positive.
fn check_logarithm(value: &Decimal) -> Result<()> {
    match value.sign() {
        Sign::Plus => Ok(()),
        Sign::NoSign => Err(domain_error(
            sqlstate::INVALID_ARGUMENT_FOR_LOGARITHM,
            "cannot take logarithm of zero",
        )),
        Sign::Minus => Err(domain_error(
            sqlstate::INVALID_ARGUMENT_FOR_LOGARITHM,
            "cannot take logarithm of a negative number",
        )),
    }
}

/// A result scale beyond what pgaccel holds, refused before computing.
fn held(scale: u32) -> Result<u32> {
    if scale > DYNAMIC_SCALE {
        return Err(too_many_decimals(scale));
    }
    Ok(scale)
}

/// Digits before the point a numeric of pgaccel's holds.
const INTEGER_DIGITS: u32 = 76 - DYNAMIC_SCALE;

/// A result PostgreSQL computes but pgaccel cannot hold, refused (0A000)
/// rather than reported as an overflow PostgreSQL would not raise.
fn too_large() -> DataFusionError {
    unsupported(&format!(
        "a numeric result with more than {INTEGER_DIGITS} digits before the decimal point"
    ))
}

/// A result of decimal weight `weight` beyond what pgaccel holds, refused
/// before computing.
fn fits(weight: f64) -> Result<()> {
    if weight >= f64::from(INTEGER_DIGITS) {
        return Err(too_large());
    }
    Ok(())
}

/// `kind` of `operands`: the result's digits and display scale (digits
/// zero when `scale_only`).
fn evaluate(kind: Kind, operands: &[Decimal], scale_only: bool) -> Result<(i256, u32)> {
    let (digits, scale) = match kind {
        Kind::Sqrt => sqrt(&operands[0], scale_only)?,
        Kind::Exp => exp(&operands[0], scale_only)?,
        Kind::Ln => ln(&operands[0], scale_only)?,
        Kind::Log10 => {
            let ten = Decimal {
                digits: BigInt::from(10u32),
                scale: 0,
            };
            log(&ten, &operands[0], scale_only)?
        }
        Kind::Log => log(&operands[0], &operands[1], scale_only)?,
        Kind::Power => power(&operands[0], &operands[1], scale_only)?,
    };
    if !scale_only && *digits.magnitude() >= *ten(INTEGER_DIGITS + scale).magnitude() {
        return Err(too_large());
    }
    Ok((to_i256(&digits)?, scale))
}

fn to_i256(digits: &BigInt) -> Result<i256> {
    if digits.bits() > 254 {
        return Err(too_large());
    }
    let mut bytes = [if digits.sign() == Sign::Minus {
        0xff
    } else {
        0
    }; 32];
    let le = digits.to_signed_bytes_le();
    bytes[..le.len()].copy_from_slice(&le);
    Ok(i256::from_le_bytes(bytes))
}

/// PostgreSQL's `numeric_sqrt`.
fn sqrt(value: &Decimal, scale_only: bool) -> Result<(BigInt, u32)> {
    if value.sign() == Sign::Minus {
        return Err(domain_error(
            "2201F",
            "cannot take square root of a negative number",
        ));
    }
    let weight = value.base_10000().map_or(0, |(weight, ..)| weight);
    // The decimal weight of the root, as PostgreSQL estimates it.
    let root_weight = (weight + 1) * 4 / 2 - 1;
    let scale = held(result_scale(root_weight, &[value.scale]))?;
    if scale_only {
        return Ok((BigInt::ZERO, scale));
    }
    // The root at `scale` decimals: √(digits × 10^(2 scale - s)), rounded
    // half up (x² < n < (x + 1)², so a tie cannot occur).
    let radicand = &value.digits * ten(2 * scale - value.scale);
    let floor = radicand.sqrt();
    let remainder = &radicand - &floor * &floor;
    Ok((if remainder > floor { floor + 1 } else { floor }, scale))
}

/// PostgreSQL's `numeric_exp`.
fn exp(value: &Decimal, scale_only: bool) -> Result<(BigInt, u32)> {
    // Beyond PostgreSQL's own range (`exp_var`).
    if value.to_f64() >= MAX_RESULT_SCALE * 3.0 {
        return Err(out_of_range());
    }
    let weight = (value.to_f64() * LOG10_E).clamp(-MAX_RESULT_SCALE, MAX_RESULT_SCALE);
    let scale = held(result_scale(weight as i32, &[value.scale]))?;
    fits(weight)?;
    if scale_only {
        return Ok((BigInt::ZERO, scale));
    }
    Ok((exp_at(&value.at(scale + GUARD), scale), scale))
}

/// `e^x` for `x` at `scale + GUARD` decimals, rounded to `scale`.
fn exp_at(x: &BigInt, scale: u32) -> BigInt {
    let working = scale + GUARD;
    rescale(&exp_fixed(x, working), working, scale)
}

/// PostgreSQL's `numeric_ln`.
fn ln(value: &Decimal, scale_only: bool) -> Result<(BigInt, u32)> {
    check_logarithm(value)?;
    let scale = held(result_scale(ln_weight(value), &[value.scale]))?;
    if scale_only {
        return Ok((BigInt::ZERO, scale));
    }
    let working = scale + GUARD;
    Ok((rescale(&ln_of(value, working), working, scale), scale))
}

/// PostgreSQL's `numeric_log`: `ln(value) / ln(base)`.
fn log(base: &Decimal, value: &Decimal, scale_only: bool) -> Result<(BigInt, u32)> {
    check_logarithm(base)?;
    check_logarithm(value)?;
    let (base_weight, value_weight) = (ln_weight(base), ln_weight(value));
    let scale = held(result_scale(
        value_weight - base_weight,
        &[base.scale, value.scale],
    ))?;
    // A logarithm near 0 divides by a small number: work with as many more
    // digits as it has leading zeros.
    let working = scale + GUARD + base_weight.unsigned_abs() + value_weight.unsigned_abs();
    let ln_base = ln_of(base, working);
    if ln_base.sign() == Sign::NoSign {
        return Err(domain_error(sqlstate::DIVISION_BY_ZERO, "division by zero"));
    }
    if scale_only {
        return Ok((BigInt::ZERO, scale));
    }
    let quotient = ln_of(value, working) * ten(working) / ln_base;
    Ok((rescale(&quotient, working, scale), scale))
}

/// PostgreSQL's `numeric_power`.
fn power(base: &Decimal, exponent: &Decimal, scale_only: bool) -> Result<(BigInt, u32)> {
    const POWER: &str = "2201F";
    if base.sign() == Sign::NoSign && exponent.sign() == Sign::Minus {
        return Err(domain_error(
            POWER,
            "zero raised to a negative power is undefined",
        ));
    }
    let unit = ten(exponent.scale);
    let integral = (&exponent.digits % &unit).sign() == Sign::NoSign;
    if base.sign() == Sign::Minus && !integral {
        return Err(domain_error(
            POWER,
            "a negative number raised to a non-integer power yields a complex result",
        ));
    }
    if integral && let Ok(n) = i32::try_from(&exponent.digits / &unit) {
        return integer_power(base, n, scale_only);
    }
    // 0 to a positive non-integer power.
    if base.sign() == Sign::NoSign {
        return Ok((BigInt::ZERO, MIN_SIG_DIGITS as u32));
    }
    // The result's weight from a low-precision exponent·ln(base), rounded
    // where PostgreSQL rounds it.
    let ln_weight = ln_weight(base);
    let low_scale = (8 - ln_weight).max(0) as u32;
    let ln_low = rescale(
        &ln_of(base, low_scale + GUARD),
        low_scale + GUARD,
        low_scale,
    );
    let product = Decimal {
        digits: rescale(
            &(ln_low * &exponent.digits),
            low_scale + exponent.scale,
            low_scale,
        ),
        scale: low_scale,
    }
    .to_f64();
    if product.abs() > MAX_RESULT_SCALE * 3.01 {
        return Err(if product > 0.0 {
            out_of_range()
        } else {
            // PostgreSQL's zero at 1000 decimals.
            too_many_decimals(MAX_DISPLAY_SCALE as u32)
        });
    }
    let weight = product * LOG10_E;
    let scale = held(result_scale(weight as i32, &[base.scale, exponent.scale]))?;
    fits(weight)?;
    if scale_only {
        return Ok((BigInt::ZERO, scale));
    }
    // exponent · ln(base) at `scale + GUARD`, from ln(base) with as many
    // more digits as the exponent has before its point.
    let working = scale + GUARD;
    let extra = exponent.digits.to_string().len() as u32;
    let ln_base = ln_of(base, working + extra);
    let x = rescale(
        &(ln_base * &exponent.digits),
        working + extra + exponent.scale,
        working,
    );
    Ok((exp_at(&x, scale), scale))
}

/// PostgreSQL's `power_var_int`: `base^n`, exact and then rounded.
fn integer_power(base: &Decimal, n: i32, scale_only: bool) -> Result<(BigInt, u32)> {
    let scale = held(result_scale(0, &[base.scale]))?;
    if scale_only {
        return Ok((BigInt::ZERO, scale));
    }
    if n == 0 {
        return Ok((ten(scale), scale));
    }
    let magnitude = n.unsigned_abs();
    if base.digits.magnitude() == ten(base.scale).magnitude() {
        // ±1: PostgreSQL allows any exponent.
        let negative = base.sign() == Sign::Minus && magnitude % 2 == 1;
        let one = ten(scale);
        return Ok((if negative { -one } else { one }, scale));
    }
    // PostgreSQL's own range ends at 131072 digits before the point: beyond
    // it an overflow.
    let digits = (base.to_f64().abs().log10() * f64::from(n)).round();
    if digits > 131_072.0 {
        return Err(out_of_range());
    }
    if base.digits.bits().saturating_mul(u64::from(magnitude)) > POWER_BITS {
        // A result far below the last decimal is zero.
        return if digits < -(f64::from(scale) + 1.0) {
            Ok((BigInt::ZERO, scale))
        } else {
            Err(unsupported(
                "power() of a numeric with an exponent this large",
            ))
        };
    }
    let power = base.digits.pow(magnitude);
    let decimals = base.scale * magnitude;
    Ok((
        if n > 0 {
            rescale(&power, decimals, scale)
        } else {
            round_div(&ten(decimals + scale), &power)
        },
        scale,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decimal(text: &str) -> Decimal {
        let (integer, fraction) = text.split_once('.').unwrap_or((text, ""));
        Decimal {
            digits: format!("{integer}{fraction}").parse().unwrap(),
            scale: fraction.len() as u32,
        }
    }

    /// `kind` of `operands` as PostgreSQL prints it.
    fn printed(kind: Kind, operands: &[&str]) -> String {
        let operands: Vec<Decimal> = operands.iter().map(|o| decimal(o)).collect();
        let (digits, scale) = evaluate(kind, &operands, false).unwrap();
        let (_, scale_only) = evaluate(kind, &operands, true).unwrap();
        assert_eq!(scale, scale_only, "{kind:?} {operands:?}");
        text(digits, scale, scale)
    }

    fn code(kind: Kind, operands: &[&str]) -> String {
        let operands: Vec<Decimal> = operands.iter().map(|o| decimal(o)).collect();
        let error = evaluate(kind, &operands, false).unwrap_err();
        crate::query::sqlstate::from_datafusion(error).code
    }

    // Every expected value below is PostgreSQL 15's answer.

    #[test]
    fn square_roots_at_postgres_scales() {
        assert_eq!(printed(Kind::Sqrt, &["2"]), "1.414213562373095");
        assert_eq!(printed(Kind::Sqrt, &["0"]), "0.000000000000000");
        assert_eq!(printed(Kind::Sqrt, &["0.5"]), "0.70710678118654752");
        assert_eq!(printed(Kind::Sqrt, &["100"]), "10.000000000000000");
        assert_eq!(printed(Kind::Sqrt, &["12345678.123"]), "3513.6417180754215");
        assert_eq!(
            printed(Kind::Sqrt, &["0.00000001234"]),
            "0.0001110855526159905"
        );
        assert_eq!(code(Kind::Sqrt, &["-1"]), "2201F");
    }

    #[test]
    fn integer_powers_are_exact_then_rounded() {
        assert_eq!(printed(Kind::Power, &["2", "3"]), "8.0000000000000000");
        assert_eq!(printed(Kind::Power, &["2.5", "2"]), "6.2500000000000000");
        assert_eq!(
            printed(Kind::Power, &["10", "20"]),
            "100000000000000000000.0000000000000000"
        );
        assert_eq!(printed(Kind::Power, &["2", "-2"]), "0.2500000000000000");
        assert_eq!(printed(Kind::Power, &["3", "-1"]), "0.3333333333333333");
        assert_eq!(printed(Kind::Power, &["1.5", "0"]), "1.0000000000000000");
        assert_eq!(printed(Kind::Power, &["0", "0"]), "1.0000000000000000");
        assert_eq!(printed(Kind::Power, &["-8", "3"]), "-512.0000000000000000");
        assert_eq!(printed(Kind::Power, &["2", "3.0"]), "8.0000000000000000");
        assert_eq!(code(Kind::Power, &["0", "-1"]), "2201F");
    }

    #[test]
    fn fractional_powers_logarithms_and_exponentials() {
        assert_eq!(printed(Kind::Power, &["2", "0.5"]), "1.4142135623730950");
        assert_eq!(printed(Kind::Exp, &["1.0"]), "2.7182818284590452");
        assert_eq!(printed(Kind::Exp, &["2"]), "7.3890560989306502");
        assert_eq!(printed(Kind::Ln, &["10.0"]), "2.3025850929940457");
        assert_eq!(printed(Kind::Ln, &["2"]), "0.6931471805599453");
        assert_eq!(printed(Kind::Log10, &["100.0"]), "2.0000000000000000");
        assert_eq!(printed(Kind::Log, &["2", "8"]), "3.0000000000000000");
        assert_eq!(code(Kind::Power, &["-8", "0.5"]), "2201F");
        assert_eq!(code(Kind::Ln, &["0"]), "2201E");
        assert_eq!(code(Kind::Log, &["1", "8"]), "22012");
        // PostgreSQL answers these; pgaccel holds 36 digits before the point.
        assert_eq!(code(Kind::Exp, &["100.0"]), "0A000");
        // Beyond PostgreSQL's own range.
        assert_eq!(code(Kind::Exp, &["6000"]), "22003");
        assert_eq!(code(Kind::Power, &["10", "200000"]), "22003");
        assert_eq!(
            printed(Kind::Power, &["0.1", "200000"]),
            "0.0000000000000000"
        );
        assert_eq!(code(Kind::Power, &["10.0", "50"]), "0A000");
    }
}
