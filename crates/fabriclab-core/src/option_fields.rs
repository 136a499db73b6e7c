//! The option fields each tool's JSON options accept, read from the types
//! themselves, so that the Python layer can check its keyword arguments and
//! scenario keys against the core's schema in a test instead of by hand.
//!
//! serde's derive hands a struct's field names to the deserializer it is
//! given; a deserializer that only records them (and then stops) reads the
//! schema without a value. Nested option groups (`job`, `env`, `tuning`, `nccl`)
//! are expanded as `group.field`. Left out: the types of the fields (the
//! Python side converts and checks each value itself; a wrong type is the
//! core's error at run time).

use crate::error::{arg_err, Result};
use crate::mpi::job::JobSpec;
use crate::mpi::run::{RunEnv, Tuning};
use crate::nccl::NcclEnv;
use crate::tools::{cbench, fio, hpl, imb, nccl_tests, osu};
use crate::traffic::{iperf, perftest};
use serde::de::{self, Deserialize, Deserializer, Visitor};

/// The tools whose options [`option_fields`] knows.
pub const TOOLS: [&str; 8] = [
    "perftest",
    "iperf",
    "imb",
    "osu",
    "cbench",
    "hpl",
    "fio",
    "nccl_tests",
];

/// A deserializer that records the field list of the struct asked for.
struct FieldProbe<'a>(&'a mut &'static [&'static str]);

impl<'de> Deserializer<'de> for FieldProbe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> std::result::Result<V::Value, Self::Error> {
        Err(de::Error::custom("not a struct"))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> std::result::Result<V::Value, Self::Error> {
        *self.0 = fields;
        Err(de::Error::custom("fields recorded"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map enum identifier ignored_any
    }
}

/// The field names of the struct `T` deserializes from.
fn fields_of<'de, T: Deserialize<'de>>() -> &'static [&'static str] {
    let mut fields: &'static [&'static str] = &[];
    let _ = T::deserialize(FieldProbe(&mut fields));
    fields
}

/// The fields of `T`, with the nested groups expanded as `group.field`.
fn expanded<'de, T: Deserialize<'de>>() -> Vec<String> {
    let mut out = Vec::new();
    for &f in fields_of::<T>() {
        let inner = match f {
            "job" => fields_of::<JobSpec>(),
            "env" => fields_of::<RunEnv>(),
            "tuning" => fields_of::<Tuning>(),
            "nccl" => fields_of::<NcclEnv>(),
            _ => {
                out.push(f.to_string());
                continue;
            }
        };
        out.extend(inner.iter().map(|g| format!("{f}.{g}")));
    }
    out
}

/// Every option field of `tool` (one of [`TOOLS`]), nested groups as
/// `group.field`, in declaration order.
pub fn option_fields(tool: &str) -> Result<Vec<String>> {
    Ok(match tool {
        "perftest" => expanded::<perftest::Options>(),
        "iperf" => expanded::<iperf::Options>(),
        "imb" => expanded::<imb::Options>(),
        "osu" => expanded::<osu::Options>(),
        "cbench" => expanded::<cbench::Options>(),
        "hpl" => expanded::<hpl::Options>(),
        "fio" => expanded::<fio::Options>(),
        "nccl_tests" => expanded::<nccl_tests::Options>(),
        _ => return arg_err(format!("no tool {tool:?}; use one of {}", TOOLS.join(", "))),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_groups_are_expanded_and_every_tool_has_fields() {
        let imb = option_fields("imb").unwrap();
        for f in [
            "benchmarks",
            "job.np",
            "job.hosts",
            "env.background",
            "tuning.library",
        ] {
            assert!(imb.iter().any(|x| x == f), "{f} not in {imb:?}");
        }
        assert!(!imb.iter().any(|x| x == "np" || x == "job"), "{imb:?}");
        for tool in TOOLS {
            assert!(option_fields(tool).unwrap().len() > 3, "{tool}");
        }
        assert!(option_fields("nccl").is_err());
        let nccl = option_fields("nccl_tests").unwrap();
        assert!(nccl.iter().any(|x| x == "nccl.proto"), "{nccl:?}");
    }
}
