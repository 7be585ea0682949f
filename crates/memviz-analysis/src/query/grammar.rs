//! [`parse_filter`]: the terms are read with winnow (module documentation of [`super`]), then
//! each field's value is checked, with errors at its column.

use super::{ActionSel, FileMatch, Filter, FilterError, Op, Pred, Term, FIELDS};
use crate::search::{parse_query, Query};
use winnow::combinator::{alt, opt, repeat};
use winnow::error::ContextError;
use winnow::prelude::*;
use winnow::stream::LocatingSlice;
use winnow::token::{any, none_of, take_till, take_while};

type In<'a> = LocatingSlice<&'a str>;
type PResult<T> = Result<T, ContextError>;

/// Most terms about the stack (`site`, `frame`, `file`, `line`, bare words): one bit each in
/// the per-stack mask.
pub(crate) const MAX_STACK_TERMS: usize = 64;

/// A value as written: its text, whether it was quoted (and the quote closed), and its byte
/// span.
struct RawValue {
    text: String,
    quoted: bool,
    closed: bool,
    start: usize,
}

/// A term as written (byte offsets).
struct RawTerm {
    negate: bool,
    start: usize,
    end: usize,
    /// (name, name start, operator, operator start)
    field: Option<(String, usize, Op, usize)>,
    value: Option<RawValue>,
}

fn ws(i: &mut In<'_>) -> PResult<()> {
    take_while(0.., char::is_whitespace).void().parse_next(i)
}

/// `"…"` with `\"` and `\\` escapes; an unterminated one runs to the end (`closed: false`).
fn quoted(i: &mut In<'_>) -> PResult<(String, bool)> {
    '"'.parse_next(i)?;
    let text: String = repeat(
        0..,
        alt((
            ('\\', any).map(|(_, c): (char, char)| c),
            none_of(['"', '\\']),
        )),
    )
    .parse_next(i)?;
    let closed = opt('"').parse_next(i)?.is_some();
    Ok((text, closed))
}

fn plain(i: &mut In<'_>) -> PResult<String> {
    take_till(1.., char::is_whitespace)
        .map(str::to_string)
        .parse_next(i)
}

fn value(i: &mut In<'_>) -> PResult<RawValue> {
    alt((
        quoted.with_span().map(|((text, closed), r)| RawValue {
            text,
            quoted: true,
            closed,
            start: r.start,
        }),
        plain.with_span().map(|(text, r)| RawValue {
            text,
            quoted: false,
            closed: true,
            start: r.start,
        }),
    ))
    .parse_next(i)
}

fn op(i: &mut In<'_>) -> PResult<Op> {
    alt((
        ">=".value(Op::Ge),
        "<=".value(Op::Le),
        "!=".value(Op::Ne),
        ">".value(Op::Gt),
        "<".value(Op::Lt),
        "=".value(Op::Eq),
        ":".value(Op::Eq),
    ))
    .parse_next(i)
}

/// `name OP [value]`: a field term (its value may be missing: an error later).
fn field_term(i: &mut In<'_>) -> PResult<(String, usize, Op, usize, Option<RawValue>)> {
    let (name, ns) = take_while(1.., |c: char| c.is_ascii_alphabetic() || c == '_')
        .with_span()
        .parse_next(i)?;
    let (o, os) = op.with_span().parse_next(i)?;
    let v = opt(value).parse_next(i)?;
    Ok((name.to_string(), ns.start, o, os.start, v))
}

fn term(i: &mut In<'_>) -> PResult<RawTerm> {
    let ((negate, body), span) = (
        opt('-').map(|m| m.is_some()),
        opt(alt((
            field_term.map(|(n, ns, o, os, v)| (Some((n, ns, o, os)), v)),
            value.map(|v| (None, Some(v))),
        ))),
    )
        .with_span()
        .parse_next(i)?;
    let (field, value) = body.unwrap_or((None, None));
    Ok(RawTerm {
        negate,
        start: span.start,
        end: span.end,
        field,
        value,
    })
}

fn terms(i: &mut In<'_>) -> PResult<Vec<RawTerm>> {
    let mut out = Vec::new();
    loop {
        ws.parse_next(i)?;
        if i.is_empty() {
            return Ok(out);
        }
        let before = i.len();
        out.push(term.parse_next(i)?);
        if i.len() == before {
            // Cannot happen (a term reads at least one character); no endless loop if it did.
            return Err(ContextError::new());
        }
    }
}

/// Parses a filter (module documentation of [`super`]); empty or blank text matches all.
pub fn parse_filter(text: &str) -> Result<Filter, FilterError> {
    let col = |byte: usize| text.get(..byte).map_or(0, |s| s.chars().count());
    let raw = terms
        .parse_next(&mut LocatingSlice::new(text))
        // The grammar accepts any text (a lone `-` is a term with no value); kept for safety.
        .map_err(|_| FilterError {
            column: 0,
            message: "cannot read the filter".to_string(),
        })?;
    let mut out = Vec::with_capacity(raw.len());
    let mut stack_terms = 0usize;
    for t in raw {
        let err = |byte: usize, message: String| FilterError {
            column: col(byte),
            message,
        };
        let Some(v) = t.value else {
            return Err(match &t.field {
                Some((name, _, _, os)) => {
                    err(*os, format!("{name} needs a value after the operator"))
                }
                None => err(t.start, "`-` needs a term after it".to_string()),
            });
        };
        if !v.closed {
            return Err(err(v.start, "unterminated quote".to_string()));
        }
        let (pred, negate) = match &t.field {
            None => (Pred::Text(text_query(&v, &err)?), t.negate),
            Some((name, ns, o, os)) => {
                let (pred, flip) = field_pred(name, *ns, *o, *os, &v, &err)?;
                (pred, t.negate != flip)
            }
        };
        if pred.is_stack_term() {
            stack_terms += 1;
            if stack_terms > MAX_STACK_TERMS {
                return Err(err(
                    t.start,
                    format!("at most {MAX_STACK_TERMS} site, frame, file, line or text terms"),
                ));
            }
        }
        out.push(Term {
            negate,
            text: text.get(t.start..t.end).unwrap_or("").to_string(),
            pred,
        });
    }
    Ok(Filter { terms: out })
}

type ErrAt<'e> = &'e dyn Fn(usize, String) -> FilterError;

/// A text value: quoted → literal substring; else the search box's syntax.
fn text_query(v: &RawValue, err: ErrAt<'_>) -> Result<Query, FilterError> {
    if v.quoted {
        return Ok(Query::Substring(v.text.to_lowercase()));
    }
    parse_query(&v.text).map_err(|e| err(v.start, format!("bad regex: {e}")))
}

/// `=`, `:` or `!=` only (text and enum fields); `!=` flips the term.
fn eq_only(name: &str, o: Op, os: usize, err: ErrAt<'_>) -> Result<bool, FilterError> {
    match o {
        Op::Eq => Ok(false),
        Op::Ne => Ok(true),
        _ => Err(err(os, format!("{name} takes `:`, `=` or `!=`"))),
    }
}

fn field_pred(
    name: &str,
    ns: usize,
    o: Op,
    os: usize,
    v: &RawValue,
    err: ErrAt<'_>,
) -> Result<(Pred, bool), FilterError> {
    let vs = v.start;
    let t = v.text.as_str();
    Ok(match name.to_ascii_lowercase().as_str() {
        "size" => (Pred::Size(o, size_value(t, vs, err)?), false),
        "lifetime" => {
            let (num, unit) = split_unit(t);
            match unit {
                "" => (Pred::LifetimeEvents(o, uint(num, vs, err)?), false),
                _ => (Pred::LifetimeUs(o, time_us(t, vs, err)?), false),
            }
        }
        "line" => (Pred::Line(o, int(t, vs, err)?), false),
        "stream" => {
            let flip = eq_only(name, o, os, err)?;
            let raw = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
                Some(hex) => u64::from_str_radix(hex, 16)
                    .map_err(|_| err(vs, format!("bad stream {t} (a number, or 0x… hex)")))?,
                None => uint(t, vs, err)?,
            };
            (Pred::Stream(Op::Eq, raw), flip)
        }
        "device" => (Pred::Device(o, int(t, vs, err)?), false),
        "site" => (Pred::Site(text_query(v, err)?), eq_only(name, o, os, err)?),
        "frame" => (Pred::Frame(text_query(v, err)?), eq_only(name, o, os, err)?),
        "phase" => (
            Pred::Phase(phase_query(v, err)?),
            eq_only(name, o, os, err)?,
        ),
        "file" => {
            let flip = eq_only(name, o, os, err)?;
            let m = if !v.quoted && t.starts_with('/') {
                match text_query(v, err)? {
                    q @ Query::Regex(_) => FileMatch::Pattern(q),
                    Query::Substring(_) => FileMatch::Suffix(t.to_string()),
                }
            } else {
                FileMatch::Suffix(t.to_string())
            };
            (Pred::File(m), flip)
        }
        "action" => {
            let flip = eq_only(name, o, os, err)?;
            let sel = match t {
                "alloc" => ActionSel::Alloc,
                "free" | "free_requested" | "free_completed" => ActionSel::Free,
                "start" => ActionSel::Start,
                "segment_alloc" | "segment_free" | "segment_map" | "segment_unmap" | "snapshot"
                | "oom" | "annotate" => ActionSel::Nothing,
                _ => {
                    return Err(err(
                        vs,
                        format!(
                            "unknown action {t} (alloc, free, start, free_requested, \
                             free_completed, segment_alloc, segment_free, segment_map, \
                             segment_unmap, snapshot, oom, annotate)"
                        ),
                    ))
                }
            };
            (Pred::Action(sel), flip)
        }
        "at" => {
            let flip = eq_only(name, o, os, err)?;
            let pred = if t == "peak" {
                Pred::AtPeak
            } else if split_unit(t).1.is_empty() {
                Pred::AtEvent(int(t, vs, err)?)
            } else {
                Pred::AtTime(time_us(t, vs, err)?)
            };
            (pred, flip)
        }
        _ => {
            return Err(err(
                ns,
                format!("unknown field {name} ({})", FIELDS.join(", ")),
            ))
        }
    })
}

/// A phase name: quoted or plain is the exact name, `/re/` a regex.
fn phase_query(v: &RawValue, err: ErrAt<'_>) -> Result<Query, FilterError> {
    if !v.quoted {
        if let q @ Query::Regex(_) = text_query(v, err)? {
            return Ok(q);
        }
    }
    // Exact name: kept as written (the evaluation compares it whole).
    Ok(Query::Substring(v.text.clone()))
}

/// `12.5ms` → (`12.5`, `ms`).
fn split_unit(t: &str) -> (&str, &str) {
    let i = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-'))
        .unwrap_or(t.len());
    t.split_at(i)
}

/// A non-negative decimal (`12`, `1.5`), as f64; no exponent, no sign.
fn decimal(num: &str) -> Option<f64> {
    let mut parts = num.splitn(2, '.');
    let int_part = parts.next().unwrap_or("");
    let frac = parts.next();
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let ok = digits(int_part) && frac.is_none_or(digits);
    ok.then(|| num.parse::<f64>().ok()).flatten()
}

fn scaled(
    num: &str,
    unit: f64,
    what: &str,
    t: &str,
    vs: usize,
    err: ErrAt<'_>,
) -> Result<f64, FilterError> {
    let n = decimal(num).ok_or_else(|| err(vs, format!("bad {what} {t}")))?;
    let v = (n * unit).round();
    if !v.is_finite() || v >= 9.2e18 {
        return Err(err(vs, format!("{what} {t} is too large")));
    }
    Ok(v)
}

fn size_value(t: &str, vs: usize, err: ErrAt<'_>) -> Result<u64, FilterError> {
    let (num, unit) = split_unit(t);
    let k = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        _ => {
            return Err(err(
                vs,
                format!("unknown unit {unit} (B, KiB, MiB, GiB, KB, MB, GB)"),
            ))
        }
    };
    Ok(scaled(num, k, "size", t, vs, err)? as u64)
}

fn time_us(t: &str, vs: usize, err: ErrAt<'_>) -> Result<i64, FilterError> {
    let (num, unit) = split_unit(t);
    let k = match unit {
        "us" | "µs" => 1.0,
        "ms" => 1e3,
        "s" => 1e6,
        _ => return Err(err(vs, format!("unknown unit {unit} (us, ms, s)"))),
    };
    Ok(scaled(num, k, "time", t, vs, err)? as i64)
}

fn uint(t: &str, vs: usize, err: ErrAt<'_>) -> Result<u64, FilterError> {
    t.parse::<u64>()
        .map_err(|_| err(vs, format!("bad number {t} (a whole number)")))
}

fn int(t: &str, vs: usize, err: ErrAt<'_>) -> Result<i64, FilterError> {
    t.parse::<i64>()
        .map_err(|_| err(vs, format!("bad number {t} (a whole number)")))
}
