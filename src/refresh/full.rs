//! `refresh_mode: full`: read the whole source table, build the next
//! acceleration aside, publish it in one step.

use futures::StreamExt;

use super::RefreshError;
use crate::accelerator::{ArrowAcceleration, TableDataBuilder};
use crate::source::{ReadFilter, Source};

/// What a completed refresh published.
#[derive(Debug, Clone, Copy)]
pub struct Published {
    pub rows: usize,
    pub bytes: usize,
    pub index_bytes: usize,
}

pub async fn run(
    source: &Source,
    acceleration: &ArrowAcceleration,
    partitions: usize,
    configured_key: &[String],
    filter: &ReadFilter,
) -> Result<Published, RefreshError> {
    let snapshot = source.read_all(filter).await?;
    let primary_key = if configured_key.is_empty() {
        snapshot.primary_key.as_slice()
    } else {
        configured_key
    };
    let mut stream = snapshot.stream;
    let mut builder = TableDataBuilder::new(snapshot.schema);
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(|e| RefreshError::read(acceleration.dataset(), e))?;
        builder
            .push(batch)
            .map_err(|e| RefreshError::build(acceleration.dataset(), e))?;
    }
    let data = builder
        .finish(partitions, primary_key)
        .map_err(|e| RefreshError::build(acceleration.dataset(), e))?;
    let published = Published {
        rows: data.rows(),
        bytes: data.bytes(),
        index_bytes: data.index_bytes(),
    };
    // Invariant: the data, and its primary-key index, are complete before
    // they become visible; a refresh that fails or is cancelled above
    // publishes nothing.
    acceleration.publish(data);
    Ok(published)
}
