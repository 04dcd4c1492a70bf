//! What each source serves is its registration table and nothing else: every endpoint it lists
//! dispatches to its function, no other endpoint reaches it, and the listings read the same table.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapters::api::{EndpointId, Request};
use adapters::platforms::all;
use adapters::sources::{Sources, SourcesConfig};
use adapters::upstream::guard::HostGuard;
use adapters::upstream::{Ctx, Http};

/// The catalogue's working example of an endpoint, parsed.
fn example(id: EndpointId) -> Request {
    let example = id.meta().example;
    let query = example.split_once('?').map_or("", |(_, q)| q);
    id.parse(query)
        .unwrap_or_else(|v| panic!("the example of {} parses: {v:?}", id.meta().path))
}

#[test]
fn a_source_is_called_for_exactly_the_endpoints_it_registers() {
    let http = Http::new(
        Arc::new(HostGuard::new(false, Default::default())),
        Vec::new(),
    )
    .unwrap();
    let ctx = Ctx {
        source: "test",
        http: &http,
        base_url: "https://upstream.example",
        credential: None,
        cursor: None,
        deadline: Instant::now() + Duration::from_secs(60),
    };
    let mut pairs = 0;
    for source in all() {
        for id in EndpointId::ALL {
            let request = example(id);
            let registered = source.endpoints().any(|e| e == id);
            // The future is built, not run: nothing is sent anywhere.
            let call = source.handlers.dispatch(&ctx, &request);
            assert_eq!(
                call.is_some(),
                registered,
                "{} and {}: dispatch and the endpoint list disagree",
                source.id,
                id.meta().path
            );
            assert_eq!(source.handlers.slot(id).is_some(), registered);
            if registered {
                assert_eq!(id.meta().platform, source.platform(), "{}", source.id);
                pairs += 1;
            }
        }
    }
    // 16 sources over 9 platforms serve 56 source/endpoint pairs.
    assert_eq!(pairs, 56);
}

#[test]
fn per_endpoint_needs_are_read_from_the_slots() {
    let mastodon = all()
        .into_iter()
        .find(|s| s.id == "fediverse.mastodon")
        .unwrap();
    assert!(!mastodon.needs_credential_for(EndpointId::FediverseTag));
    assert!(mastodon.needs_credential_for(EndpointId::FediverseSearch));
    let archive = all()
        .into_iter()
        .find(|s| s.id == "forum.arctic_shift")
        .unwrap();
    let new = EndpointId::ForumCommunityPosts
        .parse("community=rust&sort=new")
        .unwrap();
    let hot = EndpointId::ForumCommunityPosts
        .parse("community=rust&sort=hot")
        .unwrap();
    assert!(archive.handlers.serves(&new));
    assert!(!archive.handlers.serves(&hot));
    // Every source of an endpoint with `instance` follows it: the accessor is generated.
    let tag = EndpointId::FediverseTag
        .parse("query=rust&instance=fosstodon.org")
        .unwrap();
    assert_eq!(tag.instance(), Some("fosstodon.org"));
    assert_eq!(example(EndpointId::TechforumSearch).instance(), None);
}

#[test]
fn the_sources_listing_is_the_registrations() {
    let sources = Sources::new(&SourcesConfig::default()).unwrap();
    let listed = sources.list();
    assert_eq!(listed.len(), all().len());
    for info in listed {
        let source = all().into_iter().find(|s| s.id == info.id).unwrap();
        let registered: Vec<&str> = source.endpoints().map(|e| e.meta().path).collect();
        assert_eq!(info.endpoints, registered, "{}", info.id);
        assert_eq!(info.platform, source.platform());
    }
}
