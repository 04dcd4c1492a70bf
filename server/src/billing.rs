//! Credit packs (spec section 2.4): the only amounts that can be bought.

/// List price of one credit, in units of 0.00001 USD.
pub const LIST_PRICE_PER_CREDIT_E5: u64 = 400;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pack {
    pub id: &'static str,
    pub credits: u64,
    /// Price in US cents.
    pub price_cents: u64,
}

pub const PACKS: [Pack; 3] = [
    Pack {
        id: "starter",
        credits: 5_000,
        price_cents: 1_900,
    },
    Pack {
        id: "growth",
        credits: 25_000,
        price_cents: 6_500,
    },
    Pack {
        id: "pro",
        credits: 150_000,
        price_cents: 31_500,
    },
];

impl Pack {
    pub fn by_id(id: &str) -> Option<Pack> {
        PACKS.iter().copied().find(|p| p.id == id)
    }

    /// `19.00`
    pub fn price(self) -> String {
        format!("{}.{:02}", self.price_cents / 100, self.price_cents % 100)
    }

    fn price_per_credit_e5(self) -> u64 {
        self.price_cents * 1_000 / self.credits
    }

    /// `0.00380`
    pub fn price_per_credit(self) -> String {
        let e5 = self.price_per_credit_e5();
        format!("{}.{:05}", e5 / 100_000, e5 % 100_000)
    }

    /// Discount against the list price, rounded half up to a whole percent.
    pub fn discount_percent(self) -> u64 {
        let off = LIST_PRICE_PER_CREDIT_E5 - self.price_per_credit_e5();
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
    }
}
