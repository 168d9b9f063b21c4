// The visibility buffer of splat.comp.glsl, shaded: each pixel's sphere (its index + 1 in u_ids;
// 0: none) ray-cast again through the pixel's centre and lit as sphere.frag.glsl lights it, with
// its depth written, so meshes and other spheres hide it as they would an impostor.
uniform usampler2D u_ids;
uniform samplerBuffer u_spheres; // world centre, radius
uniform samplerBuffer u_speeds;
uniform mat4 u_view;
uniform mat4 u_proj;
uniform vec4 u_viewport;
uniform int u_sets;            // the point sets splat.comp.glsl drew, in the buffer's order
uniform int u_set_end[8];      // one past each set's last sphere
uniform vec3 u_set_color[8];
uniform int u_set_by_speed[8];
uniform float u_speed_max;

out vec4 o_color;

void main() {
  ivec2 px = ivec2(gl_FragCoord.xy - u_viewport.xy);
  uint id = texelFetch(u_ids, px, 0).x;
  if (id == 0u) discard;
  int i = int(id - 1u);
  vec4 s = texelFetch(u_spheres, i);
  vec3 c = (u_view * vec4(s.xyz, 1.0)).xyz;
  vec2 ndc = (gl_FragCoord.xy - u_viewport.xy) / u_viewport.zw * 2.0 - 1.0;
  vec3 dir = normalize(vec3(ndc.x / u_proj[0][0], ndc.y / u_proj[1][1], -1.0));
  float b = dot(dir, c);
  float h = max(b * b - (dot(c, c) - s.w * s.w), 0.0);
  vec3 hit = dir * (b - sqrt(h));
  vec3 n = (hit - c) / s.w;
  vec4 clip = u_proj * vec4(hit, 1.0);
  gl_FragDepth = (gl_DepthRange.diff * clip.z / clip.w + gl_DepthRange.near + gl_DepthRange.far) * 0.5;
  int set = 0;
  while (set + 1 < u_sets && i >= u_set_end[set])
    set++;
  vec3 albedo = u_set_by_speed[set] != 0 ? wf_speed_ramp(texelFetch(u_speeds, i).x / u_speed_max)
                                         : u_set_color[set];
  o_color = vec4(wf_shade(albedo, n, -dir, hit), 1.0);
}
