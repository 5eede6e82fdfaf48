//! A field-weighted BM25 (BM25F, Robertson and Zaragoza, "The Probabilistic Relevance
//! Framework: BM25 and Beyond", 2009, §3.2): each field's term frequency is normalised by
//! that field's length and weighted, the weighted sum is saturated once, and the result is
//! scaled by the term's rarity across the documents. So a word in a tool's name counts more
//! than the same word in a parameter's description, a word every tool has counts little, and
//! ten mentions of a word are not ten times one.
//!
//! Written here rather than taken from a crate: the `bm25` crate scores one text per document
//! (no fields, so no weight for a name over a description), and a full-text engine (tantivy)
//! is an index on disk for a catalog of a hundred short documents.

use std::collections::{HashMap, HashSet};

/// How much a term's saturation: past about this many (weighted) occurrences more add little.
/// 1.2 is the value BM25's authors and most engines use.
const K1: f64 = 1.2;

/// One field of every document: how much its occurrences weigh, and how much a long field's
/// count is discounted (`b`: 0 none, 1 in full proportion to its length over the average).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Field {
    pub(crate) weight: f64,
    pub(crate) b: f64,
}

/// The documents' terms, field by field (`fields[i]` for the scorer's `Field` `i`).
pub(crate) struct Document {
    pub(crate) fields: Vec<Vec<String>>,
}

/// Scores documents against a query's terms: the documents, and their statistics computed
/// once.
pub(crate) struct Scorer {
    fields: &'static [Field],
    documents: Vec<Document>,
    /// Each field's average length over the documents (at least 1, so an empty field
    /// divides by something).
    average: Vec<f64>,
    /// In how many documents each term appears, in any field.
    frequency: HashMap<String, usize>,
}

impl Scorer {
    pub(crate) fn new(fields: &'static [Field], documents: Vec<Document>) -> Self {
        let count = documents.len().max(1) as f64;
        let average = (0..fields.len())
            .map(|f| {
                let total: usize = documents.iter().map(|d| d.fields[f].len()).sum();
                (total as f64 / count).max(1.0)
            })
            .collect();
        let mut frequency: HashMap<String, usize> = HashMap::new();
        for document in &documents {
            let distinct: HashSet<&str> = document
                .fields
                .iter()
                .flatten()
                .map(String::as_str)
                .collect();
            for term in distinct {
                *frequency.entry(term.to_owned()).or_default() += 1;
            }
        }
        Self {
            fields,
            documents,
            average,
            frequency,
        }
    }

    /// The rarity of a term (BM25's idf, kept positive: a term in every document still
    /// counts a little).
    fn idf(&self, term: &str) -> f64 {
        let n = self.documents.len() as f64;
        let df = self.frequency.get(term).copied().unwrap_or(0) as f64;
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// The score of document `index` for the query's distinct `terms`; 0 when none of them
    /// is in it.
    pub(crate) fn score(&self, index: usize, terms: &[String]) -> f64 {
        let document = &self.documents[index];
        let mut seen = HashSet::new();
        let mut score = 0.0;
        for term in terms.iter().filter(|t| seen.insert(t.as_str())) {
            let weighted: f64 = self
                .fields
                .iter()
                .zip(&document.fields)
                .zip(&self.average)
                .map(|((field, words), average)| {
                    let tf = words.iter().filter(|w| *w == term).count() as f64;
                    if tf == 0.0 {
                        return 0.0;
                    }
                    let norm = 1.0 - field.b + field.b * words.len() as f64 / average;
                    field.weight * tf / norm
                })
                .sum();
            if weighted > 0.0 {
                score += self.idf(term) * weighted / (K1 + weighted);
            }
        }
        score
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIELDS: &[Field] = &[
        Field {
            weight: 3.0,
            b: 0.0,
        },
        Field {
            weight: 1.0,
            b: 0.75,
        },
    ];

    fn doc(name: &str, text: &str) -> Document {
        let split = |s: &str| s.split_whitespace().map(str::to_owned).collect();
        Document {
            fields: vec![split(name), split(text)],
        }
    }

    fn terms(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_word_in_the_name_outweighs_the_same_word_in_the_text() {
        let docs = [doc("fetch", "get a url"), doc("grep", "fetch nothing url")];
        let scorer = Scorer::new(FIELDS, docs.into());
        assert!(scorer.score(0, &terms("fetch")) > scorer.score(1, &terms("fetch")));
    }

    #[test]
    fn rare_terms_count_more_than_common_ones_and_absent_terms_nothing() {
        let docs = [
            doc("a", "file read"),
            doc("b", "file write"),
            doc("c", "file delete"),
        ];
        let scorer = Scorer::new(FIELDS, docs.into());
        assert!(scorer.score(1, &terms("write")) > scorer.score(1, &terms("file")));
        assert_eq!(scorer.score(0, &terms("write")), 0.0);
        assert_eq!(scorer.score(0, &terms("nothing here")), 0.0);
    }

    #[test]
    fn repeats_saturate_and_a_repeated_query_term_counts_once() {
        let docs = [doc("x", "echo"), doc("y", "echo echo echo echo echo echo")];
        let scorer = Scorer::new(FIELDS, docs.into());
        let once = scorer.score(0, &terms("echo"));
        let six = scorer.score(1, &terms("echo"));
        assert!(six > once && six < 3.0 * once, "{once} {six}");
        assert_eq!(scorer.score(0, &terms("echo echo")), once);
    }

    #[test]
    fn a_long_text_discounts_its_matches() {
        let docs = [
            doc("p", "move file"),
            doc("q", "move a b c d e f g h i j k l m n o p"),
        ];
        let scorer = Scorer::new(FIELDS, docs.into());
        assert!(scorer.score(0, &terms("move")) > scorer.score(1, &terms("move")));
    }
}
