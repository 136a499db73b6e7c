//! A JSON tree printed the way cJSON's `cJSON_Print` prints it (the library
//! iperf3 uses for `-J`): keys in insertion order, tab indentation, a tab
//! after each colon, arrays on one line with `, ` between elements, and
//! numbers as cJSON prints doubles (an integral value as an integer,
//! otherwise `%1.15g`, or `%1.17g` when 15 digits do not give the value
//! back).

use std::fmt::Write;

/// A JSON value with ordered object keys.
#[derive(Clone, Debug, PartialEq)]
pub enum J {
    /// A number (cJSON keeps every number as a double).
    Num(f64),
    /// A string.
    Str(String),
    /// true or false.
    Bool(bool),
    /// An object, keys in order.
    Obj(Vec<(String, J)>),
    /// An array.
    Arr(Vec<J>),
}

impl J {
    /// An object from (key, value) pairs.
    pub fn obj<K: Into<String>>(pairs: Vec<(K, J)>) -> J {
        J::Obj(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl From<f64> for J {
    fn from(v: f64) -> J {
        J::Num(v)
    }
}
impl From<u64> for J {
    fn from(v: u64) -> J {
        J::Num(v as f64)
    }
}
impl From<u32> for J {
    fn from(v: u32) -> J {
        J::Num(v as f64)
    }
}
impl From<bool> for J {
    fn from(v: bool) -> J {
        J::Bool(v)
    }
}
impl From<&str> for J {
    fn from(v: &str) -> J {
        J::Str(v.into())
    }
}
impl From<String> for J {
    fn from(v: String) -> J {
        J::Str(v)
    }
}

/// The document as `cJSON_Print` formats it (no trailing newline).
pub fn print(j: &J) -> String {
    let mut out = String::new();
    value(j, 0, &mut out);
    out
}

fn value(j: &J, depth: usize, out: &mut String) {
    match j {
        J::Num(d) => out.push_str(&number(*d)),
        J::Str(s) => string(s, out),
        J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        J::Arr(items) => {
            out.push('[');
            for (i, v) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                value(v, depth + 1, out);
            }
            out.push(']');
        }
        J::Obj(pairs) => {
            out.push_str("{\n");
            for (i, (k, v)) in pairs.iter().enumerate() {
                out.extend(std::iter::repeat_n('\t', depth + 1));
                string(k, out);
                out.push_str(":\t");
                value(v, depth + 1, out);
                if i + 1 < pairs.len() {
                    out.push(',');
                }
                out.push('\n');
            }
            out.extend(std::iter::repeat_n('\t', depth));
            out.push('}');
        }
    }
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// A double as cJSON prints it (iperf's cJSON keeps a 64-bit `valueint`).
pub fn number(d: f64) -> String {
    if !d.is_finite() {
        return "null".into();
    }
    let as_int = d as i64; // saturating
    if d == as_int as f64 {
        return as_int.to_string();
    }
    let s = fmt_g(d, 15);
    match s.parse::<f64>() {
        Ok(back) if (back - d).abs() <= back.abs().max(d.abs()) * f64::EPSILON => s,
        _ => fmt_g(d, 17),
    }
}

pub use crate::numfmt::fmt_g;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_as_in_the_iperf3_sample() {
        // Every number of shared/formats/iperf3.json prints back as it was.
        for s in [
            "0",
            "5576982528",
            "1.000364",
            "1.0003639459609985",
            "22985857494.004971",
            "21622632080.7829",
            "97.3328127636757",
            "0.79867833887686757",
            "96.534134424798822",
            "0.002",
        ] {
            assert_eq!(number(s.parse().unwrap()), s);
        }
        assert_eq!(fmt_g(1.5e-7, 15), "1.5e-07");
        assert_eq!(fmt_g(1e20, 15), "1e+20");
    }

    #[test]
    fn objects_and_arrays_use_cjson_layout() {
        let doc = J::obj(vec![
            (
                "a",
                J::Arr(vec![J::obj(vec![
                    ("x", J::from(1u64)),
                    ("y", J::from("s")),
                ])]),
            ),
            ("b", J::from(true)),
        ]);
        assert_eq!(
            print(&doc),
            "{\n\t\"a\":\t[{\n\t\t\t\"x\":\t1,\n\t\t\t\"y\":\t\"s\"\n\t\t}],\n\t\"b\":\ttrue\n}"
        );
    }
}
