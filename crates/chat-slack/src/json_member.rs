//! Removing one top-level member from a JSON object without parsing the rest:
//! a linear scan that tracks strings and nesting, for a body that was already
//! parsed (so it is valid JSON), on the ack path where a full parse and
//! re-serialization would cost more than the parse of the event itself.

/// `body` (a JSON object) without its top-level member `key` (every member
/// of that name), the rest byte for byte; `None` when `body` is not an
/// object this scan can read. A key written with escapes is compared as
/// written.
pub(crate) fn without_member(body: &[u8], key: &str) -> Option<Vec<u8>> {
    let start = body.iter().position(|b| !b.is_ascii_whitespace())?;
    if body[start] != b'{' {
        return None;
    }
    let mut out = Vec::with_capacity(body.len());
    out.push(b'{');
    let mut i = start + 1;
    let mut wrote = false;
    loop {
        i = skip_space(body, i);
        match *body.get(i)? {
            b'}' => break,
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let member_start = i;
        let key_end = string_end(body, i)?;
        let name = &body[i + 1..key_end - 1];
        i = skip_space(body, key_end);
        if *body.get(i)? != b':' {
            return None;
        }
        let value_end = value_end(body, skip_space(body, i + 1))?;
        if name != key.as_bytes() {
            if wrote {
                out.push(b',');
            }
            out.extend_from_slice(&body[member_start..value_end]);
            wrote = true;
        }
        i = value_end;
    }
    out.push(b'}');
    Some(out)
}

fn skip_space(body: &[u8], mut i: usize) -> usize {
    while body.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The index just past the string starting at `i` (its opening quote).
fn string_end(body: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        match *body.get(j)? {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
}

/// The index just past the value starting at `i`.
fn value_end(body: &[u8], i: usize) -> Option<usize> {
    match *body.get(i)? {
        b'"' => string_end(body, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *body.get(j)? {
                    b'"' => {
                        j = string_end(body, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while body
                .get(j)
                .is_some_and(|b| !matches!(b, b',' | b'}' | b']') && !b.is_ascii_whitespace())
            {
                j += 1;
            }
            (j > i).then_some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip(s: &str) -> Option<serde_json::Value> {
        let out = without_member(s.as_bytes(), "token")?;
        serde_json::from_slice(&out).ok()
    }

    #[test]
    fn only_the_top_level_member_goes() {
        let body = r#" { "token" : "t\"x", "a": {"token": "inner", "b": [1, {"c": "}]"}]}, "n": -1.5e3, "t": true, "z": null } "#;
        assert_eq!(
            strip(body),
            Some(
                serde_json::json!({"a": {"token": "inner", "b": [1, {"c": "}]"}]}, "n": -1.5e3, "t": true, "z": null})
            )
        );
        assert_eq!(
            strip(r#"{"a":1,"token":"x"}"#),
            Some(serde_json::json!({"a": 1}))
        );
        assert_eq!(strip(r#"{"token":"x"}"#), Some(serde_json::json!({})));
        assert_eq!(strip("{}"), Some(serde_json::json!({})));
    }

    #[test]
    fn what_it_cannot_read_is_none_never_a_panic() {
        for bad in [
            "",
            "[1]",
            "{",
            r#"{"a""#,
            r#"{"a":"#,
            r#"{"a":"x"#,
            r#"{"a":[1,"#,
            "{1:2}",
            r#"{"a":}"#,
        ] {
            assert_eq!(without_member(bad.as_bytes(), "token"), None, "{bad}");
        }
    }

    proptest::proptest! {
        /// Over any JSON object: the output parses, and is the input without
        /// its top-level `token`.
        #[test]
        fn the_output_is_the_object_without_the_member(
            members in proptest::collection::vec(("[a-z]{0,3}|token", proptest::prelude::any::<i64>(), "[ -~]{0,8}"), 0..6)
        ) {
            let mut object = serde_json::Map::new();
            for (k, n, s) in &members {
                object.insert(k.clone(), serde_json::json!({ "n": n, "s": s, "token": s }));
            }
            let body = serde_json::to_vec(&object).unwrap_or_default();
            let out = without_member(&body, "token").unwrap_or_default();
            let back: serde_json::Value = serde_json::from_slice(&out).unwrap_or(serde_json::Value::Null);
            object.remove("token");
            proptest::prop_assert_eq!(back, serde_json::Value::Object(object));
        }
    }
}
