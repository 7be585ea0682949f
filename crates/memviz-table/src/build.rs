//! Column builders shared by the tables: a vector moved into an Arrow array without a copy,
//! optional values with a validity bitmap, strings as dictionaries.

use arrow_array::types::{UInt32Type, UInt8Type};
use arrow_array::{
    ArrayRef, ArrowPrimitiveType, BooleanArray, DictionaryArray, PrimitiveArray, RecordBatch,
    StringArray, UInt32Array,
};
use arrow_buffer::{BooleanBuffer, NullBuffer, ScalarBuffer};
use arrow_schema::{Field, Schema};
use std::collections::HashMap;
use std::sync::Arc;

use crate::TableError;

/// A column of the batch being made: its field and its array.
pub(crate) struct Columns {
    fields: Vec<Field>,
    arrays: Vec<ArrayRef>,
}

impl Columns {
    pub(crate) fn new() -> Columns {
        Columns {
            fields: Vec::new(),
            arrays: Vec::new(),
        }
    }

    /// Adds a column (nullable when the array has nulls or `nullable`).
    pub(crate) fn add(&mut self, name: &str, array: ArrayRef, nullable: bool) {
        let nullable = nullable || array.null_count() > 0;
        self.fields
            .push(Field::new(name, array.data_type().clone(), nullable));
        self.arrays.push(array);
    }

    /// A column of plain values: the vector becomes the array's buffer (no copy).
    pub(crate) fn values<T: ArrowPrimitiveType>(&mut self, name: &str, v: Vec<T::Native>) {
        let a = PrimitiveArray::<T>::new(ScalarBuffer::from(v), None);
        self.add(name, Arc::new(a), false);
    }

    /// A column of optional values (`None` is null); nullable whatever the rows.
    pub(crate) fn optional<T: ArrowPrimitiveType>(
        &mut self,
        name: &str,
        v: Vec<Option<T::Native>>,
    ) {
        let a: PrimitiveArray<T> = v.into_iter().collect();
        self.add(name, Arc::new(a), true);
    }

    /// A column of values with a separate validity (`valid[i]` false: null).
    pub(crate) fn masked<T: ArrowPrimitiveType>(
        &mut self,
        name: &str,
        v: Vec<T::Native>,
        valid: Vec<bool>,
    ) -> Result<(), TableError> {
        let nulls = NullBuffer::new(BooleanBuffer::from(valid));
        let a = PrimitiveArray::<T>::try_new(ScalarBuffer::from(v), Some(nulls))?;
        self.add(name, Arc::new(a), true);
        Ok(())
    }

    pub(crate) fn bools(&mut self, name: &str, v: Vec<bool>) {
        self.add(name, Arc::new(BooleanArray::from(v)), false);
    }

    pub(crate) fn strings<'a>(&mut self, name: &str, v: impl Iterator<Item = &'a str>) {
        self.add(name, Arc::new(StringArray::from_iter_values(v)), false);
    }

    pub(crate) fn finish(self) -> Result<RecordBatch, TableError> {
        let schema = Arc::new(Schema::new(self.fields));
        Ok(RecordBatch::try_new(schema, self.arrays)?)
    }
}

/// Strings as a dictionary: a u32 key per row into the distinct texts, in first-seen order;
/// a row without one is null.
pub(crate) struct Dict<K: std::hash::Hash + Eq + Copy> {
    index: HashMap<K, u32>,
    /// The last row's key and index: runs of one key skip the hash map.
    last: Option<(K, u32)>,
    /// Text → its index in `texts`: two keys of one text share it (pandas' categories must
    /// be distinct).
    by_text: HashMap<String, u32>,
    texts: Vec<String>,
    keys: Vec<u32>,
    valid: Vec<bool>,
    any_null: bool,
}

impl<K: std::hash::Hash + Eq + Copy> Dict<K> {
    pub(crate) fn with_capacity(rows: usize) -> Dict<K> {
        Dict {
            index: HashMap::new(),
            last: None,
            by_text: HashMap::new(),
            texts: Vec::new(),
            keys: Vec::with_capacity(rows),
            valid: Vec::with_capacity(rows),
            any_null: false,
        }
    }

    /// A row whose text is known by `key` (`text` is asked only the first time).
    pub(crate) fn push(&mut self, key: K, text: impl FnOnce() -> String) {
        if let Some((k, i)) = self.last {
            if k == key {
                self.keys.push(i);
                self.valid.push(true);
                return;
            }
        }
        let (texts, by_text) = (&mut self.texts, &mut self.by_text);
        let k = *self.index.entry(key).or_insert_with(|| {
            let t = text();
            let next = texts.len() as u32;
            *by_text.entry(t).or_insert_with_key(|t| {
                texts.push(t.clone());
                next
            })
        });
        self.last = Some((key, k));
        self.keys.push(k);
        self.valid.push(true);
    }

    pub(crate) fn push_null(&mut self) {
        self.keys.push(0);
        self.valid.push(false);
        self.any_null = true;
    }

    pub(crate) fn into_array(self) -> Result<ArrayRef, TableError> {
        let nulls = self
            .any_null
            .then(|| NullBuffer::new(BooleanBuffer::from(self.valid)));
        let keys = UInt32Array::try_new(ScalarBuffer::from(self.keys), nulls)?;
        let values: ArrayRef = Arc::new(StringArray::from(self.texts));
        Ok(Arc::new(DictionaryArray::<UInt32Type>::try_new(
            keys, values,
        )?))
    }
}

/// A dictionary column of u8 codes into fixed names (`names[code]`).
pub(crate) fn coded(codes: Vec<u8>, names: Vec<String>) -> Result<ArrayRef, TableError> {
    let keys = PrimitiveArray::<UInt8Type>::new(ScalarBuffer::from(codes), None);
    let values: ArrayRef = Arc::new(StringArray::from(names));
    Ok(Arc::new(DictionaryArray::<UInt8Type>::try_new(
        keys, values,
    )?))
}

/// A list column whose row `i` holds `lens[i]` consecutive structs of `columns` (one
/// [`StructArray`] of every row's items, cut by offsets); `what` names the items when there
/// are more than 2^31 of them.
pub(crate) fn struct_list(
    fields: arrow_schema::Fields,
    columns: Vec<ArrayRef>,
    lens: impl Iterator<Item = usize>,
    what: &str,
) -> Result<ArrayRef, TableError> {
    let values = arrow_array::StructArray::try_new(fields.clone(), columns, None)?;
    let mut offsets: Vec<i32> = vec![0];
    let mut end = 0usize;
    for n in lens {
        end += n;
        offsets.push(
            i32::try_from(end)
                .map_err(|_| TableError::BadArgument(format!("more than 2^31 {what}")))?,
        );
    }
    let item = Arc::new(Field::new(
        "item",
        arrow_schema::DataType::Struct(fields),
        false,
    ));
    let list = arrow_array::ListArray::try_new(
        item,
        arrow_buffer::OffsetBuffer::new(ScalarBuffer::from(offsets)),
        Arc::new(values),
        None,
    )?;
    Ok(Arc::new(list))
}
