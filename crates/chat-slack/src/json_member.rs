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

/// `body` without the top-level member `key` whose value is `value`, a
/// slice of `body` that a parse of it returned (so where the member is, is
/// known): read back from the value over `"key" :` to the `{` or `,` before
/// it, and cut. `None` when what precedes the value is not that (a key
/// written with escapes) or `value` is not inside `body`.
pub(crate) fn without_value(body: &[u8], key: &str, value: &[u8]) -> Option<Vec<u8>> {
    let start = (value.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let end = start.checked_add(value.len())?;
    if end > body.len() {
        return None;
    }
    let colon = last_non_space(body, start)?;
    if body[colon] != b':' {
        return None;
    }
    let key_end = last_non_space(body, colon)? + 1;
    let key_start = key_end.checked_sub(key.len() + 2)?;
    let quoted = &body[key_start..key_end];
    if quoted.first() != Some(&b'"')
        || quoted.last() != Some(&b'"')
        || &quoted[1..quoted.len() - 1] != key.as_bytes()
    {
        return None;
    }
    // The cut: from the comma before the member, or when it is the first
    // member, up to and with the comma after it.
    let before = last_non_space(body, key_start)?;
    let (from, to) = match body[before] {
        b',' => (before, end),
        b'{' => {
            let after = skip_space(body, end);
            match *body.get(after)? {
                b',' => (key_start, after + 1),
                b'}' => (key_start, end),
                _ => return None,
            }
        }
        _ => return None,
    };
    let mut out = Vec::with_capacity(body.len() - (to - from));
    out.extend_from_slice(&body[..from]);
    out.extend_from_slice(&body[to..]);
    Some(out)
}

/// The index of the last byte before `i` that is not whitespace.
fn last_non_space(body: &[u8], i: usize) -> Option<usize> {
    body.get(..i)?
        .iter()
        .rposition(|b| !b.is_ascii_whitespace())
}

fn skip_space(body: &[u8], mut i: usize) -> usize {
    while body.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// The index just past the string starting at `i` (its opening quote): a
/// search for the next quote or backslash, which skips the string's other
/// bytes in bulk.
fn string_end(body: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        j += memchr::memchr2(b'"', b'\\', body.get(j..)?)?;
        if body[j] == b'"' {
            return Some(j + 1);
        }
        j += 2;
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

    /// The value of `body`'s top-level `token` as a parse returns it: a
    /// slice of `body`.
    fn token_value(body: &str) -> Option<&str> {
        #[derive(serde::Deserialize)]
        struct Token<'a> {
            #[serde(borrow)]
            token: Option<&'a serde_json::value::RawValue>,
        }
        let t: Token<'_> = serde_json::from_str(body).ok()?;
        t.token.map(|v| v.get())
    }

    fn cut(body: &str) -> Option<String> {
        let value = token_value(body)?;
        without_value(body.as_bytes(), "token", value.as_bytes())
            .and_then(|v| String::from_utf8(v).ok())
    }

    #[test]
    fn a_value_found_by_a_parse_is_cut_with_its_key_and_one_comma() {
        assert_eq!(cut(r#"{"token":"t","a":1}"#).as_deref(), Some(r#"{"a":1}"#));
        assert_eq!(
            cut(r#"{"a":1,"token":"t","b":{"token":"inner"}}"#).as_deref(),
            Some(r#"{"a":1,"b":{"token":"inner"}}"#)
        );
        assert_eq!(
            cut(r#"{"a":[1,"token"],"token":"t\"x"}"#).as_deref(),
            Some(r#"{"a":[1,"token"]}"#)
        );
        assert_eq!(cut(r#" { "token" : "t" } "#).as_deref(), Some(" {  } "));
        assert_eq!(
            cut(r#"{ "token" : {"a": "}"} , "z": null}"#).as_deref(),
            Some(r#"{  "z": null}"#)
        );
    }

    #[test]
    fn a_key_it_cannot_read_back_is_none_for_the_scan_to_do() {
        // An escaped key names the same member, but is not `"token"` as written.
        let body = r#"{"a":1,"tok\u0065n":"t"}"#;
        assert_eq!(token_value(body), Some(r#""t""#));
        assert_eq!(cut(body), None);
        assert_eq!(
            without_member(body.as_bytes(), "token").map(String::from_utf8),
            Some(Ok(body.to_owned()))
        );
        // A value that is not inside the body.
        assert_eq!(without_value(b"{\"token\":1}", "token", b"1"), None);
    }

    proptest::proptest! {
        /// The cut where a parse found the value, and the scan, give the same
        /// object.
        #[test]
        fn cutting_where_the_parse_found_it_matches_the_scan(
            members in proptest::collection::vec(("[a-z]{0,3}", proptest::prelude::any::<i64>(), "[ -~]{0,8}"), 0..6),
            at in 0usize..6,
            spaced in proptest::prelude::any::<bool>(),
        ) {
            let mut object = serde_json::Map::new();
            for (i, (k, n, s)) in members.iter().enumerate() {
                if i == at.min(members.len()) {
                    object.insert("token".to_owned(), serde_json::json!(s));
                }
                object.insert(k.clone(), serde_json::json!({ "n": n, "token": s }));
            }
            if at >= members.len() {
                object.insert("token".to_owned(), serde_json::json!("last"));
            }
            let body = if spaced {
                serde_json::to_string_pretty(&object)
            } else {
                serde_json::to_string(&object)
            }
            .unwrap_or_default();
            let value = token_value(&body).unwrap_or_default();
            let out = without_value(body.as_bytes(), "token", value.as_bytes()).unwrap_or_default();
            let back: serde_json::Value = serde_json::from_slice(&out).unwrap_or(serde_json::Value::Null);
            let scanned = without_member(body.as_bytes(), "token").unwrap_or_default();
            let scanned: serde_json::Value = serde_json::from_slice(&scanned).unwrap_or(serde_json::Value::Bool(false));
            proptest::prop_assert_eq!(back, scanned);
        }

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
