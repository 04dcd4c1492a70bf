//! Query parsing plus validation of every platform endpoint, on realistic query strings.
//! Plain `Instant` loops (no harness); prints per-endpoint and overall figures. Target: under
//! 5 µs per request. Run with `cargo bench -p adapters`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use adapters::api::EndpointId;
use adapters::request::{Needed, ParamKind};

/// Every parameter with a realistic value: the catalogue example, a mid-range number, a
/// non-default choice, and a cursor of a typical size.
fn realistic_query(e: EndpointId) -> String {
    let meta = e.meta();
    let mut pairs = Vec::new();
    for p in meta.params {
        let value = match (&p.kind, p.name) {
            (ParamKind::Text(None), "query") => "rust async runtime \"tokio\" -java".to_string(),
            (ParamKind::Text(Some(g)), _) if g.name == "cursor" => {
                "eyJvZmZzZXQiOjI1LCJxIjoicnVzdCJ9".repeat(4)
            }
            (ParamKind::Integer { min, max }, _) => ((min + max) / 2).to_string(),
            (ParamKind::Choice(values), _) => values[values.len() - 1].to_string(),
            (ParamKind::Boolean, _) => "true".to_string(),
            _ => p.example.to_string(),
        };
        pairs.push((p.name, value));
    }
    // At most one of each exclusive group (the forum post's `url` or `id`).
    for group in meta.exclusive {
        let mut seen = false;
        pairs.retain(|(n, _)| {
            let member = group.contains(n);
            let keep = !(member && seen);
            seen |= member;
            keep
        });
    }
    // Within the catalogue's cross-parameter rules (the forum's `after` only with `sort=new`).
    for rule in meta.requires {
        if !rule.when.iter().any(|w| pairs.iter().any(|(n, _)| n == w)) {
            continue;
        }
        for (name, need) in rule.then {
            if let Needed::OneOf(values) = need
                && let Some(pair) = pairs.iter_mut().find(|(n, _)| n == name)
            {
                pair.1 = values[0].to_string();
            }
        }
    }
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

fn main() {
    // `cargo test --benches` runs this too; keep that quick.
    let quick = std::env::args().any(|a| a == "--test");
    let budget = if quick {
        Duration::from_millis(1)
    } else {
        Duration::from_millis(200)
    };
    let mut rows = Vec::new();
    let (mut total_time, mut total_n) = (Duration::ZERO, 0u64);
    for e in EndpointId::ALL {
        let q = realistic_query(e);
        e.parse(&q)
            .unwrap_or_else(|v| panic!("{}?{q} is not valid: {v}", e.meta().path));
        // Warm up (regex compilation happens once per grammar on first use).
        for _ in 0..1_000 {
            black_box(e.parse(black_box(&q)).is_ok());
        }
        let mut n = 0u64;
        let start = Instant::now();
        while start.elapsed() < budget {
            for _ in 0..1_000 {
                black_box(e.parse(black_box(&q)).is_ok());
            }
            n += 1_000;
        }
        let elapsed = start.elapsed();
        total_time += elapsed;
        total_n += n;
        rows.push((e.meta().path, elapsed.as_nanos() as f64 / n as f64, q.len()));
    }
    rows.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!(
        "{:<36} {:>10} {:>12}",
        "endpoint", "ns/request", "query bytes"
    );
    for (path, ns, len) in &rows {
        println!("{path:<36} {ns:>10.0} {len:>12}");
    }
    let mean = total_time.as_nanos() as f64 / total_n as f64;
    let worst = rows.first().map_or(0.0, |r| r.1);
    println!(
        "overall: {} endpoints, mean {:.0} ns/request, slowest {:.0} ns/request (target < 5000 ns){}",
        rows.len(),
        mean,
        worst,
        if worst < 5_000.0 {
            ""
        } else {
            "  ABOVE TARGET"
        }
    );
}
