//! Credit packs (spec section 2.4): the only amounts that can be bought.

pub use adapters::api::{CURRENCY, LIST_PRICE_MICRO, PACKS, Pack};

/// List price of one credit, in units of 0.00001 USD (the precision of `price_per_credit`).
pub const LIST_PRICE_PER_CREDIT_E5: u64 = LIST_PRICE_MICRO / 10;

/// The list price as the plans body shows it, `0.004`: micro units without trailing zeros.
pub fn list_price_per_credit() -> String {
    let text = format!(
        "{}.{:06}",
        LIST_PRICE_MICRO / 1_000_000,
        LIST_PRICE_MICRO % 1_000_000
    );
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Pricing derived from a pack's catalogue data.
pub trait Pricing: Sized {
    fn by_id(id: &str) -> Option<Self>;
    fn price(self) -> String;
    fn price_per_credit(self) -> String;
    fn discount_percent(self) -> u64;
}

fn price_per_credit_e5(p: Pack) -> u64 {
    p.price_cents * 1_000 / p.credits
}

impl Pricing for Pack {
    fn by_id(id: &str) -> Option<Pack> {
        PACKS.iter().copied().find(|p| p.id == id)
    }

    /// `19.00`
    fn price(self) -> String {
        format!("{}.{:02}", self.price_cents / 100, self.price_cents % 100)
    }

    /// `0.00380`
    fn price_per_credit(self) -> String {
        let e5 = price_per_credit_e5(self);
        format!("{}.{:05}", e5 / 100_000, e5 % 100_000)
    }

    /// Discount against the list price, rounded half up to a whole percent (the generator
    /// refuses a pack dearer per credit than the list price, so this cannot underflow).
    fn discount_percent(self) -> u64 {
        let off = LIST_PRICE_PER_CREDIT_E5 - price_per_credit_e5(self);
        (off * 100 + LIST_PRICE_PER_CREDIT_E5 / 2) / LIST_PRICE_PER_CREDIT_E5
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packs_match_the_spec() {
        let shown: Vec<(&str, u64, String, String, u64)> = PACKS
            .iter()
            .map(|p| {
                (
                    p.id,
                    p.credits,
                    p.price(),
                    p.price_per_credit(),
                    p.discount_percent(),
                )
            })
            .collect();
        assert_eq!(
            shown,
            vec![
                ("starter", 5_000, "19.00".into(), "0.00380".into(), 5),
                ("growth", 25_000, "65.00".into(), "0.00260".into(), 35),
                ("pro", 150_000, "315.00".into(), "0.00210".into(), 48),
            ]
        );
        assert_eq!(list_price_per_credit(), "0.004");
        assert_eq!(Pack::by_id("growth").map(|p| p.credits), Some(25_000));
        assert_eq!(Pack::by_id("enterprise"), None);
    }
}
