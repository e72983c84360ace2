use super::*;

/// nvcc 13.0's dry run of `nvcc -c -arch=compute_80 -code=sm_80,sm_90,compute_80 -Xptxas -v
/// --keep --keep-dir /k -MD -MF /k/deps.d -o /k/hot.o hot.cu`, its paths shortened.
const DRYRUN_C: &str = r#"#$ _NVVM_BRANCH_=nvvm
#$ _SPACE_= 
#$ TOP=/cuda/bin/..
#$ CICC_PATH=/cuda/bin/../nvvm/bin
#$ PATH=/cuda/bin/../nvvm/bin:/cuda/bin:/usr/bin:/bin
#$ INCLUDES="-I/cuda/bin/..//include"  
#$ c++ -D__CUDA_ARCH__=800 -D__CUDA_ARCH_LIST__=800 -E -x c++  -D__CUDACC__ "-I/cuda/bin/..//include"   "-isystem" "/cuda/include/cccl" -include "cuda_runtime.h" -m64 "hot.cu" -o "/k/hot.cpp1.ii" 
#$ c++ -D__CUDA_ARCH_LIST__=800 -E -x c++ -D__CUDACC__ -D__NVCC__  -m64 "hot.cu" -o "/k/hot.cpp4.ii" 
#$ -- Filter Dependencies -- > /k/deps.d
#$ cudafe++ --c++17 --orig_src_file_name "hot.cu" --orig_src_path_name "/src/hot.cu" --gen_c_file_name "/k/hot.cudafe1.cpp" --stub_file_name "hot.cudafe1.stub.c" --gen_module_id_file --module_id_file_name "/k/hot.module_id" "/k/hot.cpp4.ii" 
#$ "$CICC_PATH/cicc" --c++17 -arch compute_80 -m64 --include_file_name "hot.fatbin.c" --module_id_file_name "/k/hot.module_id" "/k/hot.cpp1.ii" -o "/k/hot.ptx"
#$ ptxas -arch=sm_90 -m64 -v  "/k/hot.ptx"  -o "/k/hot.sm_90.cubin" 
#$ ptxas -arch=sm_80 -m64 -v  "/k/hot.ptx"  -o "/k/hot.sm_80.cubin" 
#$ fatbinary --create="/k/hot.fatbin" -64 --ident="hot.cu" --cmdline="-v  " "--image3=kind=ptx,sm=80,file=/k/hot.ptx" "--image3=kind=elf,sm=90,file=/k/hot.sm_90.cubin" --embedded-fatbin="/k/hot.fatbin.c" 
#$ c++ -D__CUDA_ARCH__=800 -c -x c++  -fPIC -I"inc" -m64 "/k/hot.cudafe1.cpp" -o "/k/hot.o" 
"#;

fn runs(steps: &Steps) -> Vec<(&str, How)> {
    steps
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Run { program, how, .. } => Some((program.as_str(), *how)),
            Step::Dependencies(_) => None,
        })
        .collect()
}

#[test]
fn every_step_of_nvcc_c_is_run_and_each_compiler_goes_through_the_cache() {
    let steps = parse(DRYRUN_C, PathBuf::from("/k")).expect("understood");
    assert_eq!(
        runs(&steps),
        [
            ("c++", How::Preprocess),
            ("c++", How::Preprocess),
            ("cudafe++", How::Cached),
            ("/cuda/bin/../nvvm/bin/cicc", How::CachedInKeepDir),
            ("ptxas", How::Cached),
            ("ptxas", How::Cached),
            ("fatbinary", How::Plain),
            ("c++", How::CachedHost),
        ]
    );
    assert_eq!(
        steps.steps[2],
        Step::Dependencies(PathBuf::from("/k/deps.d")),
        "in nvcc's order, after both preprocessor runs"
    );
    let Step::Run { args, .. } = &steps.steps[7] else {
        panic!("fatbinary");
    };
    assert_eq!(
        args,
        &[
            "--create=/k/hot.fatbin",
            "-64",
            "--ident=hot.cu",
            "--cmdline=-v  ",
            "--image3=kind=ptx,sm=80,file=/k/hot.ptx",
            "--image3=kind=elf,sm=90,file=/k/hot.sm_90.cubin",
            "--embedded-fatbin=/k/hot.fatbin.c",
        ]
    );
    let Step::Run { args, .. } = &steps.steps[8] else {
        panic!("host compile");
    };
    assert!(args.contains(&"-Iinc".to_owned()), "{args:?}");
    assert_eq!(
        steps.env[3],
        ("CICC_PATH".into(), "/cuda/bin/../nvvm/bin".into())
    );
    assert_eq!(steps.messages, "");
}

#[test]
fn a_step_this_module_does_not_know_runs_the_command_as_one() {
    let unknown = format!("{DRYRUN_C}#$ rm /k/x_dlink.reg.c\n");
    assert_eq!(parse(&unknown, PathBuf::from("/k")), None);
    let piped = DRYRUN_C.replace("-o \"/k/hot.ptx\"", "| tee /k/hot.ptx");
    assert_eq!(parse(&piped, PathBuf::from("/k")), None);
    let unset = DRYRUN_C.replace("$CICC_PATH", "$NOT_SET_BY_NVCC");
    assert_eq!(parse(&unset, PathBuf::from("/k")), None);
    assert_eq!(
        parse("#$ PATH=/cuda/bin\n", PathBuf::from("/k")),
        None,
        "nothing to run"
    );
}

#[test]
fn nvcc_messages_are_kept_for_the_log() {
    let text = "nvcc warning : The -std=c++03 flag is not supported.\n#$ ptxas -arch=sm_80 -v \"a.ptx\" -o \"/k/a.cubin\"\n";
    let steps = parse(text, PathBuf::from("/k")).unwrap();
    assert_eq!(
        steps.messages,
        "nvcc warning : The -std=c++03 flag is not supported.\n"
    );
}

#[test]
fn words_are_split_as_a_shell_would() {
    let env = vec![("DIR".to_owned(), "/a b".to_owned())];
    let split = |line: &str| split_words(line, &env);
    assert_eq!(
        split(r#"tool "x y" 'q "r"' a\ b "\"in\"" "c:\d" ${DIR}/x "$DIR"  """#).unwrap(),
        ["tool", "x y", "q \"r\"", "a b", "\"in\"", "c:\\d", "/a b/x", "/a b", ""]
    );
    assert_eq!(split("tool \"open").as_deref(), None);
    assert_eq!(split("tool > file").as_deref(), None);
    assert_eq!(split("tool $OTHER").as_deref(), None);
    assert_eq!(split("tool \"a > b\"").unwrap(), ["tool", "a > b"]);
}

#[test]
fn a_command_without_a_keep_dir_gets_one_beside_its_output() {
    let args: Vec<OsString> = ["-fatbin", "-o", "/w/hot.fatbin", "/w/hot.ptx"]
        .map(OsString::from)
        .to_vec();
    let (with, dir) = with_keep_dir(&args).unwrap();
    assert_eq!(dir, PathBuf::from("/w"));
    assert_eq!(&with[..4], &args[..]);
    assert_eq!(
        &with[4..],
        ["--keep", "--keep-dir", "/w"].map(OsString::from)
    );
    let kept: Vec<OsString> = ["-c", "--keep-dir", "/k", "-o", "/w/hot.o", "hot.cu"]
        .map(OsString::from)
        .to_vec();
    assert_eq!(
        with_keep_dir(&kept),
        Some((kept.clone(), PathBuf::from("/k")))
    );
}
