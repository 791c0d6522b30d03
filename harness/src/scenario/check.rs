//! Evaluating matchers against JSON responses, and field paths.
//!
//! A field path is dot-separated: `state`, `records.0.index`, `0.id` (first element of an array
//! response). `.` alone is the whole response. Numeric components index arrays.

use super::format::Matcher;
use serde_json::Value as Json;

/// Look a dot path up in a JSON value.
pub fn lookup<'a>(v: &'a Json, path: &str) -> Option<&'a Json> {
    if path == "." || path.is_empty() {
        return Some(v);
    }
    let mut cur = v;
    for part in path.split('.') {
        cur = match cur {
            Json::Object(m) => m.get(part)?,
            Json::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn as_f64(v: &Json) -> Option<f64> {
    v.as_f64()
}

/// Numbers compare by value (1 == 1.0); everything else structurally.
fn json_eq(a: &Json, b: &Json) -> bool {
    match (a, b) {
        (Json::Number(x), Json::Number(y)) => x.as_f64() == y.as_f64(),
        _ => a == b,
    }
}

/// Check one matcher; `Err` carries a message saying what was found.
pub fn check(value: Option<&Json>, m: &Matcher) -> Result<(), String> {
    let show = |v: Option<&Json>| v.map_or("(absent)".to_string(), |v| v.to_string());
    let ok = match m {
        Matcher::Exists(want) => value.is_some() == *want,
        Matcher::Equals(want) => value.is_some_and(|v| json_eq(v, want)),
        Matcher::NotEquals(want) => value.is_some_and(|v| !json_eq(v, want)),
        Matcher::Contains(s) => value.is_some_and(|v| match v {
            Json::String(t) => t.contains(s.as_str()),
            other => other.to_string().contains(s.as_str()),
        }),
        Matcher::Gt(x) => value.and_then(as_f64).is_some_and(|v| v > *x),
        Matcher::Gte(x) => value.and_then(as_f64).is_some_and(|v| v >= *x),
        Matcher::Lt(x) => value.and_then(as_f64).is_some_and(|v| v < *x),
        Matcher::Lte(x) => value.and_then(as_f64).is_some_and(|v| v <= *x),
        Matcher::Len(n) => value.is_some_and(|v| match v {
            Json::Array(a) => a.len() == *n,
            Json::String(s) => s.len() == *n,
            Json::Object(o) => o.len() == *n,
            _ => false,
        }),
        Matcher::OneOf(opts) => value.is_some_and(|v| opts.iter().any(|o| json_eq(v, o))),
    };
    if ok {
        Ok(())
    } else {
        Err(format!("expected {m:?}, found {}", show(value)))
    }
}

/// Check all `field = matcher` pairs; returns every failure.
pub fn check_all<'a>(
    v: &Json,
    matchers: impl IntoIterator<Item = (&'a String, &'a Matcher)>,
) -> Vec<String> {
    matchers
        .into_iter()
        .filter_map(|(path, m)| {
            check(lookup(v, path), m)
                .err()
                .map(|e| format!("`{path}`: {e}"))
        })
        .collect()
}

/// Replace `${name}` with saved values (strings as they are, other JSON as its text).
pub fn substitute(
    text: &str,
    vars: &std::collections::BTreeMap<String, Json>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed `${{` in {text:?}"))?;
        let name = &after[..end];
        let v = vars
            .get(name)
            .ok_or_else(|| format!("`${{{name}}}` was not saved by an earlier step"))?;
        match v {
            Json::String(s) => out.push_str(s),
            other => out.push_str(&other.to_string()),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Substitute inside every string of a JSON value.
pub fn substitute_json(
    v: &Json,
    vars: &std::collections::BTreeMap<String, Json>,
) -> Result<Json, String> {
    Ok(match v {
        // A string that is exactly one variable takes the variable's JSON value (and type).
        Json::String(s)
            if s.starts_with("${")
                && s.ends_with('}')
                && s[2..s.len() - 1]
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_') =>
        {
            let name = &s[2..s.len() - 1];
            vars.get(name)
                .cloned()
                .ok_or_else(|| format!("`${{{name}}}` was not saved by an earlier step"))?
        }
        Json::String(s) => Json::String(substitute(s, vars)?),
        Json::Array(a) => Json::Array(
            a.iter()
                .map(|x| substitute_json(x, vars))
                .collect::<Result<_, _>>()?,
        ),
        Json::Object(o) => Json::Object(
            o.iter()
                .map(|(k, x)| Ok((k.clone(), substitute_json(x, vars)?)))
                .collect::<Result<_, String>>()?,
        ),
        other => other.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_and_matchers() {
        let v = json!({"state": "Stopped", "n": 3, "records": [{"index": 7}], "msg": "nic eth9 missing"});
        assert_eq!(lookup(&v, "records.0.index"), Some(&json!(7)));
        assert_eq!(lookup(&v, "records.1.index"), None);
        assert!(check(lookup(&v, "state"), &Matcher::Equals(json!("Stopped"))).is_ok());
        assert!(check(lookup(&v, "n"), &Matcher::Equals(json!(3.0))).is_ok());
        assert!(check(lookup(&v, "msg"), &Matcher::Contains("eth9".into())).is_ok());
        assert!(check(lookup(&v, "n"), &Matcher::Gt(3.0)).is_err());
        assert!(check(lookup(&v, "records"), &Matcher::Len(1)).is_ok());
        assert!(check(lookup(&v, "nope"), &Matcher::Exists(false)).is_ok());
        let e = check(lookup(&v, "nope"), &Matcher::Equals(json!(1))).unwrap_err();
        assert!(e.contains("(absent)"));
        let fails = check_all(
            &v,
            [(&"state".to_string(), &Matcher::Equals(json!("Initialized")))],
        );
        assert_eq!(fails.len(), 1);
        assert!(fails[0].contains("\"Stopped\""));
    }

    #[test]
    fn substitution() {
        let mut vars = std::collections::BTreeMap::new();
        vars.insert("id".to_string(), json!("a-1"));
        assert_eq!(substitute("/x/${id}/y", &vars).unwrap(), "/x/a-1/y");
        assert!(substitute("${nope}", &vars).is_err());
        assert!(substitute("${id", &vars).is_err());
        assert_eq!(
            substitute_json(&json!({"id": "${id}"}), &vars).unwrap(),
            json!({"id": "a-1"})
        );
    }
}
