use chat_model::*;

fn show(name: &str, cfg: Config) {
    let r = check(cfg);
    println!("== {name}: {} states, depth {}, {:?}; failed {:?}", r.unique_states, r.max_depth, r.elapsed, r.failed());
    for (p, t) in &r.counterexamples {
        if !p.starts_with("example") {
            println!("-- {p}\n{t}");
        }
    }
}

#[test]
#[ignore]
fn explore() {
    let which = std::env::var("WHICH").unwrap_or_default();
    let base = |p, s| Config::new(p, s);
    let mut cfgs: Vec<(&str, Config)> = vec![
        ("durable queue no faults", base(Protocol::Durable, Strategy::Queue)),
        ("legacy queue no faults", base(Protocol::Legacy, Strategy::Queue)),
        ("durable debounce no faults", base(Protocol::Durable, Strategy::Debounce)),
        ("durable queue calls", base(Protocol::Durable, Strategy::Queue).faults(Faults::CALLS)),
        ("durable queue calls fixed", Config { replays_extend_lease: true, ..base(Protocol::Durable, Strategy::Queue).faults(Faults::CALLS) }),
        ("durable debounce calls fixed", Config { replays_extend_lease: true, ..base(Protocol::Durable, Strategy::Debounce).faults(Faults::CALLS) }),
        ("durable queue crash stall shutdown fixed", Config { replays_extend_lease: true, ..base(Protocol::Durable, Strategy::Queue).faults(Faults { crash: true, stall: true, shutdown: true, ..Faults::NONE }) }),
        ("durable queue crash stall shutdown", base(Protocol::Durable, Strategy::Queue).faults(Faults { crash: true, stall: true, shutdown: true, ..Faults::NONE })),
        ("durable debounce calls", base(Protocol::Durable, Strategy::Debounce).faults(Faults::CALLS)),
    ];
    cfgs.retain(|(n, _)| which.is_empty() || n.contains(&which));
    for (n, c) in cfgs {
        show(n, c);
    }
}

#[test]
#[ignore]
fn legacy() {
    let lost_on = |calls: Calls| Faults { lost_reply: true, calls, ..Faults::NONE };
    let dup_on = |calls: Calls| Faults { duplicate: true, calls, ..Faults::NONE };
    let l = Config::new(Protocol::Legacy, Strategy::Queue);
    for (name, cfg, prop) in [
        ("legacy lost admit", l.faults(lost_on(Calls { admit: true, ..Calls::NONE })), I2),
        ("legacy lost finish", l.faults(lost_on(Calls { finish: true, ..Calls::NONE })), I2),
        ("legacy dup finish", l.faults(dup_on(Calls { finish: true, ..Calls::NONE })), I1),
        ("legacy resend admit", l.faults(Faults { resend: true, calls: Calls { admit: true, ..Calls::NONE }, ..Faults::NONE }), I2),
        ("legacy debounce lost finish", Config::new(Protocol::Legacy, Strategy::Debounce).faults(lost_on(Calls { finish: true, ..Calls::NONE })), I2),
    ] {
        let r = find(cfg, prop);
        println!("== {name}: {} states {:?}; found {:?}", r.unique_states, r.elapsed, r.failed());
        if let Some(t) = r.counterexamples.get(prop) { println!("{t}"); }
    }
}

#[test]
#[ignore]
fn coverage() {
    use std::collections::{BTreeMap, HashSet, VecDeque};
    use stateright::Model;
    let which = std::env::var("WHICH").unwrap_or_default();
    let fixed = |c: Config| Config { replays_extend_lease: true, ..c };
    let q = Config::new(Protocol::Durable, Strategy::Queue);
    let d = Config::new(Protocol::Durable, Strategy::Debounce);
    let all = Faults { crash: true, stall: true, shutdown: true, ..Faults::CALLS };
    for (name, cfg) in [
        ("queue calls", fixed(q.faults(Faults::CALLS))),
        ("queue all", fixed(q.faults(all))),
        ("debounce all", fixed(d.faults(all))),
    ] {
        if !which.is_empty() && !name.contains(&which) { continue; }
        let m = ProtocolModel::new(cfg);
        let mut seen = HashSet::new();
        let mut q = VecDeque::new();
        let mut tags: BTreeMap<String, usize> = BTreeMap::new();
        let mut acts: BTreeMap<String, usize> = BTreeMap::new();
        for s in m.init_states() { seen.insert(s.clone()); q.push_back(s); }
        while let Some(s) = q.pop_front() {
            let mut a = Vec::new();
            m.actions(&s, &mut a);
            for act in a {
                for t in m.explain(&s, &act) { *tags.entry(t).or_default() += 1; }
                let k = format!("{act:?}"); let k = k.split([' ', '(']).next().unwrap().to_string();
                *acts.entry(k).or_default() += 1;
                let n = m.next_state(&s, act).unwrap();
                if seen.insert(n.clone()) { q.push_back(n); }
            }
        }
        println!("== {name}: {} states", seen.len());
        for (t, n) in tags { println!("   {n:8} {t}"); }
        for (t, n) in acts { println!("   {n:8} action {t}"); }
    }
}

#[test]
#[ignore]
fn budget() {
    let which = std::env::var("WHICH").unwrap_or_default();
    let b: u8 = std::env::var("BUDGET").ok().and_then(|v| v.parse().ok()).unwrap_or(2);
    let fixed = |c: Config| Config { replays_extend_lease: true, fault_budget: b, faults: Faults { give_up: std::env::var("GIVEUP").is_ok(), ..c.faults }, ..c };
    let q = Config::new(Protocol::Durable, Strategy::Queue);
    let d = Config::new(Protocol::Durable, Strategy::Debounce);
    let all = Faults { crash: true, stall: true, shutdown: true, ..Faults::CALLS };
    for (name, cfg) in [
        ("queue calls", fixed(q.faults(Faults::CALLS))),
        ("queue crash stall shutdown", fixed(q.faults(Faults { crash: true, stall: true, shutdown: true, ..Faults::NONE }))),
        ("queue all", fixed(q.faults(all))),
        ("debounce calls", fixed(d.faults(Faults::CALLS))),
        ("debounce all", fixed(d.faults(all))),
    ] {
        if !which.is_empty() && !name.contains(&which) { continue; }
        show(name, cfg);
    }
}
