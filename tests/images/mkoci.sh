#!/usr/bin/env bash
# mkoci.sh: pack layer tars into an OCI image archive with tar, sha256sum and a few lines
# of JSON, as the image-oci suite's input (no registry, no docker or podman here).
#   usage: mkoci.sh oci|docker OUT.tar LAYER...
# LAYER is a tar, a gzip'd tar or a zstd'd tar (the media type follows its magic bytes).
#   oci:    oci-layout, index.json, blobs/sha256/{manifest,config,layers}
#   docker: what `docker save` writes: manifest.json, HEX.json (the config), N/layer.tar
# Faults, for the refusals: MKOCI_CORRUPT=N changes a byte of layer N's blob after its
# digest was taken; MKOCI_DROP=N leaves layer N's blob out.
set -euo pipefail
fmt=${1:?oci|docker} out=${2:?OUT.tar}
shift 2
(($#)) || { echo "mkoci.sh: no layers" >&2; exit 2; }
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/blobs/sha256"
sha() { sha256sum "$@" | cut -d' ' -f1; }

layers='' diffs='' docker_layers='' i=0
for l; do
	i=$((i + 1))
	case $(od -An -tx1 -N4 "$l" | tr -d ' \n') in
	1f8b*) mt=tar+gzip diff=$(gzip -dc "$l" | sha) ;;
	28b52ffd) mt=tar+zstd diff=$(zstd -dcq "$l" | sha) ;;
	*) mt=tar diff=$(sha "$l") ;;
	esac
	dg=$(sha "$l")
	size=$(stat -c %s "$l")
	if [[ $fmt == oci ]]; then
		blob=$d/blobs/sha256/$dg
	else
		mkdir -p "$d/$i"
		blob=$d/$i/layer.tar
		docker_layers+="${docker_layers:+,}\"$i/layer.tar\""
	fi
	[[ ${MKOCI_DROP-} == "$i" ]] || cp "$l" "$blob"
	[[ ${MKOCI_CORRUPT-} == "$i" ]] && printf 'X' | dd of="$blob" bs=1 seek=$((size / 2)) conv=notrunc status=none
	layers+="${layers:+,}{\"mediaType\":\"application/vnd.oci.image.layer.v1.$mt\",\"digest\":\"sha256:$dg\",\"size\":$size}"
	diffs+="${diffs:+,}\"sha256:$diff\""
done

printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin","SEAT_OCI_TEST=1"],"Cmd":["/bin/sh"],"WorkingDir":"/root"},"rootfs":{"type":"layers","diff_ids":[%s]}}' \
	"$diffs" >"$d/config.json"
cdg=$(sha "$d/config.json")
csize=$(stat -c %s "$d/config.json")
if [[ $fmt == oci ]]; then
	mv "$d/config.json" "$d/blobs/sha256/$cdg"
	printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[%s]}' \
		"$cdg" "$csize" "$layers" >"$d/manifest.json"
	mdg=$(sha "$d/manifest.json")
	msize=$(stat -c %s "$d/manifest.json")
	mv "$d/manifest.json" "$d/blobs/sha256/$mdg"
	printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"}}]}' \
		"$mdg" "$msize" >"$d/index.json"
	printf '{"imageLayoutVersion":"1.0.0"}' >"$d/oci-layout"
else
	rmdir "$d/blobs/sha256" "$d/blobs"
	mv "$d/config.json" "$d/$cdg.json"
	printf '[{"Config":"%s.json","RepoTags":["seat/test:1"],"Layers":[%s]}]' "$cdg" "$docker_layers" >"$d/manifest.json"
fi
tar -C "$d" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@1 -cf "$out" .
